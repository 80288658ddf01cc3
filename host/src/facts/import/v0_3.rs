//! Contract 0.3.0, served by delegating to the current version: later
//! versions only add, so each 0.3 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin.

use crate::contract::v0_3::reconciler::guest0_3_0::{facts as v3, types as v3_types};

delegate_facts!(v3, v3_types:
    now, workload, secret, config_map, get, list, api_availability,
    network_policies, node_pod_cidrs, exposure, cluster_role,
    secret_certificates, last_apply, children, last_apply_time,
);
