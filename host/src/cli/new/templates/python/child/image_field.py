        "image": {"type": "string", "description": "The greeter's container image.", "default": "busybox:1.36"},
