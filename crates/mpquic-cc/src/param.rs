//! A built-in controller's parameter values: read from their `key=value` strings with their
//! ranges checked, and the same ranges checked again on values assembled by hand. Every
//! built-in's parameters ([`crate::builtin::Builtin`]) go through these, so a kind of value (a
//! `beta`, a gain, a minimum window) is read and refused with one message whichever controller
//! takes it.

use std::str::FromStr;

use crate::{ConfigError, InitialWindow};

/// One `key=value` parameter of `controller`, trimmed; the one grammar of built-in and
/// registered controllers' parameters.
pub(crate) fn split_param<'a>(
    controller: &'static str,
    param: &'a str,
) -> Result<(&'a str, &'a str), ConfigError> {
    let (key, value) = param.split_once('=').ok_or(ConfigError::BadValue {
        controller,
        param: "parameter",
        value: param.to_owned(),
        reason: "expected key=value",
    })?;
    Ok((key.trim(), value.trim()))
}

/// A finite number that passes `valid`.
pub(crate) fn float(
    controller: &'static str,
    param: &'static str,
    value: &str,
    valid: impl Fn(f64) -> bool,
    reason: &'static str,
) -> Result<f64, ConfigError> {
    let bad = |reason| ConfigError::BadValue { controller, param, value: value.to_owned(), reason };
    let x: f64 = value.parse().map_err(|_| bad("not a number"))?;
    if !x.is_finite() || !valid(x) {
        return Err(bad(reason));
    }
    Ok(x)
}

/// A number of a configuration assembled by hand, as [`float`] reads it.
pub(crate) fn check_float(
    controller: &'static str,
    param: &'static str,
    x: f64,
    valid: impl Fn(f64) -> bool,
    reason: &'static str,
) -> Result<(), ConfigError> {
    check(controller, x.is_finite() && valid(x), param, x.to_string(), reason)
}

/// AMP's and XMP's ECN cut `beta`.
pub(crate) fn beta(controller: &'static str, value: &str) -> Result<f64, ConfigError> {
    float(controller, "beta", value, beta_ok, BETA_REASON)
}

fn beta_ok(beta: f64) -> bool {
    beta >= 2.0
}

const BETA_REASON: &str = "must be at least 2";

/// `beta` of a configuration assembled by hand, as [`beta`] reads it.
pub(crate) fn check_beta(controller: &'static str, beta: f64) -> Result<(), ConfigError> {
    check_float(controller, "beta", beta, beta_ok, BETA_REASON)
}

/// The coupled controllers' `initial_window`.
pub(crate) fn initial_window(
    controller: &'static str,
    value: &str,
) -> Result<InitialWindow, ConfigError> {
    value.parse().map_err(|()| ConfigError::BadValue {
        controller,
        param: "initial_window",
        value: value.to_owned(),
        reason: InitialWindow::NAMES,
    })
}

/// The `cwnd_min` values accepted, packets: a floor above RFC 9002's initial window of 10
/// packets would make the first window a floor, which no paper studies.
const MIN_WINDOW_RANGE: std::ops::RangeInclusive<u32> = 1..=10;
const MIN_WINDOW_REASON: &str = "must be 1 to 10 packets";

/// `cwnd_min`, packets.
pub(crate) fn min_window(controller: &'static str, value: &str) -> Result<u32, ConfigError> {
    let bad = |reason| ConfigError::BadValue {
        controller,
        param: "cwnd_min",
        value: value.to_owned(),
        reason,
    };
    let w: u32 = value.parse().map_err(|_| bad("not a whole number"))?;
    if !MIN_WINDOW_RANGE.contains(&w) {
        return Err(bad(MIN_WINDOW_REASON));
    }
    Ok(w)
}

/// `cwnd_min` of a configuration assembled by hand, as [`min_window`] reads it.
pub(crate) fn check_min_window(controller: &'static str, w: u32) -> Result<(), ConfigError> {
    let ok = MIN_WINDOW_RANGE.contains(&w);
    check(controller, ok, "cwnd_min", w.to_string(), MIN_WINDOW_REASON)
}

/// `true` or `false`.
pub(crate) fn boolean(
    controller: &'static str,
    param: &'static str,
    value: &str,
) -> Result<bool, ConfigError> {
    value.parse().map_err(|_| ConfigError::BadValue {
        controller,
        param,
        value: value.to_owned(),
        reason: "expected true or false",
    })
}

/// The DCTCP alpha estimator's gain `g` (DCTCP and DCM).
pub(crate) fn gain(controller: &'static str, value: &str) -> Result<f64, ConfigError> {
    float(controller, "g", value, gain_ok, GAIN_REASON)
}

fn gain_ok(g: f64) -> bool {
    g > 0.0 && g <= 1.0
}

const GAIN_REASON: &str = "must be in (0, 1]";

/// `g` of a configuration assembled by hand, as [`gain`] reads it.
pub(crate) fn check_gain(controller: &'static str, g: f64) -> Result<(), ConfigError> {
    check_float(controller, "g", g, gain_ok, GAIN_REASON)
}

/// A whole number of at least 1.
pub(crate) fn positive<T: FromStr + PartialOrd + Default>(
    controller: &'static str,
    param: &'static str,
    value: &str,
) -> Result<T, ConfigError> {
    let bad = |reason| ConfigError::BadValue { controller, param, value: value.to_owned(), reason };
    let x: T = value.parse().map_err(|_| bad("not a whole number"))?;
    if x <= T::default() {
        return Err(bad(POSITIVE_REASON));
    }
    Ok(x)
}

const POSITIVE_REASON: &str = "must be at least 1";

/// A whole number of a configuration assembled by hand, as [`positive`] reads it.
pub(crate) fn check_positive<T: PartialOrd + Default + ToString>(
    controller: &'static str,
    param: &'static str,
    x: T,
) -> Result<(), ConfigError> {
    check(controller, x > T::default(), param, x.to_string(), POSITIVE_REASON)
}

/// `Ok` if `ok`, else `param`'s `value` refused with `reason`.
fn check(
    controller: &'static str,
    ok: bool,
    param: &'static str,
    value: String,
    reason: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::BadValue { controller, param, value, reason })
    }
}
