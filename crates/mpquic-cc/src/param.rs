//! A built-in controller's parameters: one table per typed configuration, each entry naming a
//! parameter once with the field it sets and the rule its values follow. Reading a `key=value`
//! string ([`Parameters::read`]) and checking a configuration assembled by hand
//! ([`Parameters::check`]) both go through the entry, so a parameter's rule lives in one place,
//! and a kind of value (a `beta`, a gain, a minimum window) is refused with one message whichever
//! controller takes it.
//!
//! A table is written with [`parameters!`] inside an impl of
//! [`TypedConfig`](crate::builtin::TypedConfig):
//!
//! ```text
//! const PARAMETERS: Parameters<Self> = parameters![
//!     Parameter::beta(|c| &mut c.beta),
//!     Parameter::positive("gamma", |c| &mut c.gamma),
//!     Parameter::new("ssr", |c| &mut c.ssr),
//! ];
//! ```

use std::str::FromStr;

use crate::builtin::unknown_parameter;
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

/// A type of parameter value: how a `key=value` string writes one.
pub(crate) trait Value: Copy + 'static {
    /// The value `text` writes, or why it writes none.
    fn read(text: &str) -> Result<Self, &'static str>;

    /// The value as [`Value::read`] takes it, for the error about a value set by hand.
    fn written(self) -> String;

    /// Whether this is a value at all: no parameter takes a float that is not finite, which
    /// `f64`'s parser reads (`inf`, `NaN`).
    fn is_finite(self) -> bool {
        true
    }
}

impl Value for f64 {
    fn read(text: &str) -> Result<Self, &'static str> {
        text.parse().map_err(|_| "not a number")
    }
    fn written(self) -> String {
        self.to_string()
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// The `Value`s read by their `FromStr` and written by their `Display`, each with what is said of
/// a string its parser refuses.
macro_rules! parsed_values {
    ($($type:ty: $unreadable:expr;)*) => {$(
        impl Value for $type {
            fn read(text: &str) -> Result<Self, &'static str> {
                text.parse().map_err(|_| $unreadable)
            }
            fn written(self) -> String {
                self.to_string()
            }
        }
    )*};
}

parsed_values! {
    u32: "not a whole number";
    u64: "not a whole number";
    bool: "expected true or false";
}

impl Value for InitialWindow {
    fn read(text: &str) -> Result<Self, &'static str> {
        InitialWindow::from_str(text).map_err(|()| InitialWindow::NAMES)
    }
    fn written(self) -> String {
        self.name().to_owned()
    }
}

/// One parameter of the typed configuration `C`: its name, the field of type `T` it sets, and
/// the values it accepts. Built by the constructors below, in const tables.
pub(crate) struct Parameter<C, T> {
    /// The `key` of `key=value`.
    pub(crate) name: &'static str,
    /// The field, as the one way to it both reading and checking use.
    field: fn(&mut C) -> &mut T,
    /// Whether a (finite) value is in range...
    valid: fn(T) -> bool,
    /// ...and what [`ConfigError::BadValue`] says if it is not.
    reason: &'static str,
}

impl<C, T: Value> Parameter<C, T> {
    /// `name`, any value of its type (`true`, `false`; a name of an enumeration).
    pub(crate) const fn new(name: &'static str, field: fn(&mut C) -> &mut T) -> Self {
        // Every value read is accepted: of the types this is for, only a float could be refused
        // (as not finite), and a float parameter has a range of its own (`in_range`).
        Parameter { name, field, valid: |_| true, reason: "must be finite" }
    }

    /// `name`, a (finite) value that passes `valid`; others are refused with `reason`.
    pub(crate) const fn in_range(
        name: &'static str,
        field: fn(&mut C) -> &mut T,
        valid: fn(T) -> bool,
        reason: &'static str,
    ) -> Self {
        Parameter { name, field, valid, reason }
    }

    /// Whether `x` may be the parameter's value.
    fn accepts(&self, x: T) -> bool {
        x.is_finite() && (self.valid)(x)
    }

    /// The error for `value`, of `controller`'s parameter, because of `reason`.
    fn bad(&self, controller: &'static str, value: String, reason: &'static str) -> ConfigError {
        ConfigError::BadValue { controller, param: self.name, value, reason }
    }
}

impl<C, T: Value + PartialOrd + Default> Parameter<C, T> {
    /// `name`, a whole number of at least 1.
    pub(crate) const fn positive(name: &'static str, field: fn(&mut C) -> &mut T) -> Self {
        Parameter::in_range(name, field, |x| x > T::default(), "must be at least 1")
    }
}

impl<C> Parameter<C, f64> {
    /// AMP's and XMP's ECN cut `beta`: `w -= w / beta`.
    pub(crate) const fn beta(field: fn(&mut C) -> &mut f64) -> Self {
        Parameter::in_range("beta", field, |beta| beta >= 2.0, "must be at least 2")
    }

    /// The DCTCP alpha estimator's gain `g` (DCTCP and DCM).
    pub(crate) const fn gain(field: fn(&mut C) -> &mut f64) -> Self {
        Parameter::in_range("g", field, |g| g > 0.0 && g <= 1.0, "must be in (0, 1]")
    }
}

impl<C> Parameter<C, u32> {
    /// `cwnd_min`, packets: 1 to 10, since a floor above RFC 9002's initial window of 10
    /// packets would make the first window a floor, which no paper studies.
    pub(crate) const fn min_window(field: fn(&mut C) -> &mut u32) -> Self {
        let valid = |w| (1..=10).contains(&w);
        Parameter::in_range("cwnd_min", field, valid, "must be 1 to 10 packets")
    }
}

impl<C> Parameter<C, InitialWindow> {
    /// The coupled controllers' `initial_window`.
    pub(crate) const fn initial_window(field: fn(&mut C) -> &mut InitialWindow) -> Self {
        Parameter::new("initial_window", field)
    }
}

/// A [`Parameter`] with the type of its field hidden, as a table holds it.
pub(crate) trait Entry<C> {
    /// Set the field to `value`, read and checked; `controller` names the built-in in errors.
    fn read(
        &self,
        config: &mut C,
        controller: &'static str,
        value: &str,
    ) -> Result<(), ConfigError>;

    /// Check the field's value, as [`Entry::read`] would have checked it.
    fn check(&self, config: &C, controller: &'static str) -> Result<(), ConfigError>;
}

impl<C: Copy, T: Value> Entry<C> for Parameter<C, T> {
    fn read(
        &self,
        config: &mut C,
        controller: &'static str,
        value: &str,
    ) -> Result<(), ConfigError> {
        let x = T::read(value).map_err(|reason| self.bad(controller, value.to_owned(), reason))?;
        if !self.accepts(x) {
            return Err(self.bad(controller, value.to_owned(), self.reason));
        }
        *(self.field)(config) = x;
        Ok(())
    }

    fn check(&self, config: &C, controller: &'static str) -> Result<(), ConfigError> {
        // The field is reached through the one accessor the table has, which lends it
        // mutably: a copy of the (small, `Copy`) configuration lends it here.
        let x = *(self.field)(&mut { *config });
        if self.accepts(x) {
            Ok(())
        } else {
            Err(self.bad(controller, x.written(), self.reason))
        }
    }
}

/// A typed configuration's parameter table, in the order the parameters are documented (the
/// registry lists them so). Written with [`parameters!`].
pub(crate) struct Parameters<C: 'static> {
    /// Each entry's name, for the registration (kept apart because it must be a
    /// `&'static [&'static str]`).
    pub(crate) names: &'static [&'static str],
    /// The entries, in the order of `names`.
    pub(crate) entries: &'static [&'static dyn Entry<C>],
}

impl<C: 'static> Parameters<C> {
    /// Set `key` in `config` to `value`, read and checked; a key not in the table is refused
    /// as the registry refuses it.
    pub(crate) fn read(
        &self,
        config: &mut C,
        controller: &'static str,
        key: &str,
        value: &str,
    ) -> Result<(), ConfigError> {
        let k = self.names.iter().position(|name| *name == key);
        let entry = k.map(|k| self.entries[k]).ok_or_else(|| unknown_parameter(controller, key))?;
        entry.read(config, controller, value)
    }

    /// Check every parameter of `config`, in the table's order; the first out of range is the
    /// error.
    pub(crate) fn check(&self, config: &C, controller: &'static str) -> Result<(), ConfigError> {
        self.entries.iter().try_for_each(|entry| entry.check(config, controller))
    }
}

/// `parameter` as a parameter of `C`: the table's closures (`|c| &mut c.beta`) learn their
/// argument's type from it.
pub(crate) const fn of<C, T>(parameter: Parameter<C, T>) -> Parameter<C, T> {
    parameter
}

/// The [`Parameters`] of the typed configuration whose `TypedConfig` impl this is written in
/// (`Self`), from its entries ([`Parameter`] values): each names its parameter once, and the
/// names and the entries are both taken from it.
macro_rules! parameters {
    ($($parameter:expr),* $(,)?) => {
        $crate::param::Parameters {
            names: &[$($crate::param::of::<Self, _>($parameter).name),*],
            entries: &[$(&$crate::param::of::<Self, _>($parameter)),*],
        }
    };
}

pub(crate) use parameters;
