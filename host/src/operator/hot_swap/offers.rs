//! Modules offered to the [`super::reloader::Reloader`] from elsewhere than
//! the guests directory (a GuestModule object's source), and what became of
//! each offer.

use tokio::sync::{mpsc, oneshot};

use super::gate::Refusal;
use super::guests_dir::GuestFile;
use super::promotion::Promotion;
use crate::pass::review::Review;

/// A module to serve `kind` in place of the one serving it, whichever file
/// that came from: the gate and promotion hold it as they hold a file.
pub(crate) struct Offer {
    /// Named `guestmodule/<name>`, never a file of the guests directory.
    pub file: GuestFile,
    /// The kind it must serve.
    pub kind: String,
    pub promotion: Promotion,
    pub reply: oneshot::Sender<Answer>,
}

/// The reloader's answer to an offer.
pub(crate) struct Answer {
    pub offered: Offered,
    /// The review of the shadow run, if the module was shadowed (bounded:
    /// the parents that hold it first).
    pub review: Option<Review>,
}

/// What became of an offer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Offered {
    /// Swapped in (or serving already).
    Serving,
    /// Passed every check, not swapped in ([`Promotion::Checked`]).
    Checked,
    /// Refused by a check; the serving module stays.
    Refused(Refusal),
    /// Not served yet: what it needs is not installed; tried again on every
    /// poll.
    Pending(Refusal),
}

pub(crate) type OfferSender = mpsc::UnboundedSender<Offer>;
pub(crate) type OfferReceiver = mpsc::UnboundedReceiver<Offer>;

/// What the name of an offered module starts with.
pub(crate) const OFFERED_PREFIX: &str = "guestmodule/";

/// The name an offer's module goes by where a guests directory file's would.
pub(crate) fn offer_file(object: &str) -> String {
    format!("{OFFERED_PREFIX}{object}")
}
