//! The algorithms, one module each, as hooks over the shared core. Each is written on the public
//! [`coupled`](crate::coupled) API only (OLIA and BALIA use nothing else; the older modules also
//! share the helpers below).
//!
//! Shared pieces live in one place: the Reno step in [`reno`], the LIA increase (used by LIA,
//! DCM and MMPTCP's second phase) in [`lia`], and the DCTCP alpha estimator (used by DCTCP and
//! DCM) in [`alpha`].

pub(crate) mod alpha;
pub(crate) mod amp;
pub(crate) mod balia;
pub(crate) mod cprague;
pub(crate) mod dcm;
pub(crate) mod dctcp;
pub(crate) mod lia;
pub(crate) mod mmptcp;
pub(crate) mod mptcp_d;
pub(crate) mod olia;
pub(crate) mod prague;
pub(crate) mod reno;
pub(crate) mod xmp;

/// The controllers this crate ships, registered through the public registry as a user's are
/// ([`crate::register`]): the built-ins from their table ([`crate::builtin`]), then Prague and
/// cprague. The registry starts with them.
pub(crate) fn registrations() -> impl Iterator<Item = crate::Registration> {
    let l4s = [prague::registration(), cprague::registration()];
    crate::builtin::registrations().chain(l4s)
}
