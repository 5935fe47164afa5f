//! DCTCP's estimate of the extent of congestion (RFC 8257 section 3.3), shared by DCTCP and DCM.
//!
//! At each round end of a path: `F` = marked / acknowledged packets in the round (at most 1),
//! `alpha = (1 - g) * alpha + g * F`. On an ECN reaction (once per round) the window becomes
//! `w * (1 - alpha / 2)`.
//!
//! Order (RFC 8257 section 3.3 and Linux's `tcp_dctcp.c`): an ACK's marks are counted, then, if
//! the ACK ends the observation window, alpha is updated, and only then does the ACK's ECE cut
//! the window, with the new alpha (Linux: `dctcp_update_alpha` runs from `in_ack_event` before
//! `tcp_fastretrans_alert` enters CWR and calls `dctcp_ssthresh`). So when the ACK frame that
//! raises the CE count also ends the round, [`end_round_before_cut`] closes the round first.
//!
//! Readings:
//! - `alpha` starts at 1 (RFC 8257 section 3.3 recommends 1, the conservative choice: the first
//!   reaction halves, as Reno would, before any estimate exists).
//! - `F` counts packets, as ALGORITHMS.md says, not bytes as RFC 8257 does; with full-size
//!   packets they agree. When the stack only reports that an ACK frame raised the CE count
//!   (`exact: false`, one mark per frame), `F` is an underestimate whenever one frame covers
//!   several marked packets; the snapshot's `ce_exact` says which kind of count was used.

use crate::coupled::{Core, RoundStats, Slot};
use crate::Notice;

/// One path's alpha.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Alpha(pub f64);

impl Default for Alpha {
    fn default() -> Self {
        Alpha(1.0)
    }
}

/// Update the path in `s`'s alpha from the round that just ended and report it.
pub(crate) fn update(core: &mut Core<Alpha>, s: Slot, round: &RoundStats, g: f64) {
    let fraction = round.ce_fraction();
    let ext = core.ext_mut(s);
    ext.0 = (1.0 - g) * ext.0 + g * fraction;
    let alpha = ext.0;
    let path = core.id(s);
    core.notify(Notice::AlphaUpdated { path, alpha, marked_fraction: fraction });
}

/// A CE increase on the path in `s`: if its ACK frame also ends the round, close the round now (the
/// frame's marks are already counted in it), so that the cut that follows uses the updated
/// alpha. The frame's end then finds no round to close.
pub(crate) fn end_round_before_cut(core: &mut Core<Alpha>, s: Slot, g: f64) {
    if let Some(round) = core.end_round_now(s) {
        update(core, s, &round, g);
    }
}

/// The window after an ECN reaction on the path in `s`: `w * (1 - alpha / 2)`.
pub(crate) fn cut(core: &Core<Alpha>, s: Slot) -> f64 {
    let p = core.path(s);
    p.cwnd() * (1.0 - p.ext().0 / 2.0)
}
