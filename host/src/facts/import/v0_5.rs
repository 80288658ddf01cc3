//! Contract 0.5.0, served by delegating to the current version: later
//! versions only add, so each 0.5 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin.

use crate::contract::v0_5::reconciler::guest0_5_0::{facts as v5, types as v5_types};

delegate_facts!(v5, v5_types:
    now, workload, secret, config_map, get, list, api_availability,
    network_policies, node_pod_cidrs, exposure, cluster_role,
    secret_certificates, last_apply, children, last_apply_time,
    job, egress_policies, change_state,
);
