//! Who the host is, and where: the username the API server authenticates
//! it as and the cluster's identity, asked once and bound into its plans.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use reconciler_conventions::engine::ErrorClass;

use crate::operator::write::api_error::ApiErrorClass;

use super::{PlanError, Planner};

/// Who the host is, and where: what its decisions and plans bind.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The username the API server authenticates the host as.
    pub username: String,
    /// The UID of the cluster's `kube-system` namespace.
    pub cluster: String,
}

impl Planner {
    /// Who the host is and where, asked of the cluster once.
    pub async fn identity(&self) -> Result<&Identity, PlanError> {
        self.identity
            .get_or_try_init(|| async {
                let review = Api::<SelfSubjectReview>::all(self.client.clone())
                    .create(&PostParams::default(), &SelfSubjectReview::default())
                    .await
                    .map_err(|e| {
                        PlanError::api("asking the cluster who the host is (SelfSubjectReview)", &e)
                    })?;
                let username = review
                    .status
                    .and_then(|s| s.user_info)
                    .and_then(|u| u.username)
                    .filter(|u| !u.is_empty())
                    .ok_or_else(|| PlanError::Api {
                        what: "asking the cluster who the host is (SelfSubjectReview)".into(),
                        class: ApiErrorClass::Reported(ErrorClass::ReconciliationFailed),
                        text: "no username in the answer".into(),
                    })?;
                let kube_system = Api::<Namespace>::all(self.client.clone())
                    .get("kube-system")
                    .await
                    .map_err(|e| {
                        PlanError::api(
                            "reading the kube-system namespace (the cluster's identity)",
                            &e,
                        )
                    })?;
                Ok(Identity {
                    username,
                    cluster: kube_system.metadata.uid.unwrap_or_default(),
                })
            })
            .await
    }
}
