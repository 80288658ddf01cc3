        "image": {"type": "string", "description": "The greeter's container image.", "default": "busybox:1.36"},
        "schedule": {"type": "string", "description": "When to say it (cron syntax).", "default": "*/5 * * * *"},
