//! Contract 0.2.0, served by delegating to the current version: later
//! versions only add, so each 0.2 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin.

use crate::contract::v0_2::reconciler::guest0_2_0::{facts as v2, types as v2_types};

delegate_facts!(v2, v2_types:
    now, workload, secret, config_map, get, list, api_availability,
    network_policies, node_pod_cidrs, exposure, cluster_role,
    secret_certificates, last_apply,
);
