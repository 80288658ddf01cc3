    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": spec["schedule"],
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [
                                {
                                    "name": "greeter",
                                    "image": spec["image"],
                                    "command": ["sh", "-c", 'echo "$GREETING"'],
                                    "env": [{"name": "GREETING", "value": spec["greeting"]}],
                                }
                            ],
                        }
                    }
                }
            },
        },
    }
