//! API errors of a pass, classified: a conflict is retried quietly, the
//! other classes end the pass and are reported once each.

use reconciler_conventions::engine::ErrorClass;

use crate::operator::replica::fence;

/// What an API error means for the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiErrorClass {
    /// 409: someone wrote first (or the fence refused the write); retry
    /// soon, report nothing.
    Conflict,
    /// Reported with the engine's error class.
    Reported(ErrorClass),
}

/// The error's own words: the API server's message for an API error (its
/// `Status` debug dump would fill the bounded message), else the display.
pub fn text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.reason),
        other => other.to_string(),
    }
}

/// Classifies a Kubernetes API error. A write the replica's fence refused
/// is retried as a conflict is: nothing was sent, nothing is reported.
pub fn classify(e: &kube::Error) -> ApiErrorClass {
    if fence::is_fenced(e) {
        return ApiErrorClass::Conflict;
    }
    let kube::Error::Api(status) = e else {
        return ApiErrorClass::Reported(ErrorClass::ReconciliationFailed);
    };
    classify_status(status.code, &status.reason, &status.message)
}

/// The rule, on the fields of a `metav1.Status`.
pub(crate) fn classify_status(code: u16, reason: &str, message: &str) -> ApiErrorClass {
    let lower = message.to_lowercase();
    if code == 409 && reason != "AlreadyExists" {
        return ApiErrorClass::Conflict;
    }
    if code == 403 && lower.contains("exceeded quota") {
        return ApiErrorClass::Reported(ErrorClass::QuotaExceeded);
    }
    let admission = lower.contains("admission webhook")
        || lower.contains("validatingadmissionpolicy")
        || lower.contains("denied the request")
        || lower.contains("denied request");
    if (code == 403 || code == 422 || code == 400) && admission {
        return ApiErrorClass::Reported(ErrorClass::AdmissionDenied);
    }
    ApiErrorClass::Reported(ErrorClass::ReconciliationFailed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_table() {
        let cases = [
            (
                409,
                "Conflict",
                "the object has been modified",
                ApiErrorClass::Conflict,
            ),
            (
                403,
                "Forbidden",
                "pods \"x\" is forbidden: exceeded quota: compute, requested: cpu=1",
                ApiErrorClass::Reported(ErrorClass::QuotaExceeded),
            ),
            (
                400,
                "BadRequest",
                "admission webhook \"v.example.com\" denied the request: no",
                ApiErrorClass::Reported(ErrorClass::AdmissionDenied),
            ),
            (
                422,
                "Invalid",
                "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: x",
                ApiErrorClass::Reported(ErrorClass::AdmissionDenied),
            ),
            (
                403,
                "Forbidden",
                "User \"x\" cannot patch resource",
                ApiErrorClass::Reported(ErrorClass::ReconciliationFailed),
            ),
            (
                500,
                "InternalError",
                "etcdserver: request timed out",
                ApiErrorClass::Reported(ErrorClass::ReconciliationFailed),
            ),
            (
                409,
                "AlreadyExists",
                "exists",
                ApiErrorClass::Reported(ErrorClass::ReconciliationFailed),
            ),
        ];
        for (code, reason, message, want) in cases {
            assert_eq!(
                classify_status(code, reason, message),
                want,
                "{code} {message}"
            );
        }
    }
}
