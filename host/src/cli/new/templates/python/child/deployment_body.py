    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/instance": name}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/instance": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "greeter",
                            "image": spec["image"],
                            "command": ["sh", "-c", 'echo "$GREETING"; sleep infinity'],
                            "env": [{"name": "GREETING", "value": spec["greeting"]}],
                        }
                    ],
                },
            },
        },
    }
