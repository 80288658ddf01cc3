  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name },
    data: { greeting: spec.greeting },
  };
