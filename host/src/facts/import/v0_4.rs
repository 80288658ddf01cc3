//! Contract 0.4.0, served by delegating to the current version: later
//! versions only add, so each 0.4 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin.

use crate::contract::v0_4::reconciler::guest0_4_0::{facts as v4, types as v4_types};

delegate_facts!(v4, v4_types:
    now, workload, secret, config_map, get, list, api_availability,
    network_policies, node_pod_cidrs, exposure, cluster_role,
    secret_certificates, last_apply, children, last_apply_time,
    job, egress_policies,
);
