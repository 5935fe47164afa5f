//! Errors as the user reads them: one line, each cause once.

/// `error` and its causes on one line, "error: cause: root cause". A cause is left out when the
/// error above it already ends with its text: mpquic's and rustls's errors put their source in
/// their own message and also return it as `source()`, so `{:#}` would print it twice.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    let mut above = String::new();
    for cause in error.chain() {
        let message = cause.to_string();
        if !above.ends_with(&message) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&message);
        }
        above = message;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its source in its own message, as thiserror's `{source}` does.
    #[derive(Debug)]
    struct Repeats(std::io::Error);

    impl std::fmt::Display for Repeats {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "connection failed: {}", self.0)
        }
    }

    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    fn io(message: &str) -> std::io::Error {
        std::io::Error::other(message.to_string())
    }

    #[test]
    fn a_cause_the_error_already_names_is_printed_once() {
        let error = anyhow::Error::new(Repeats(io("bad certificate")));
        assert_eq!(format!("{error:#}"), "connection failed: bad certificate: bad certificate");
        assert_eq!(one_line(&error), "connection failed: bad certificate");
        let wrapped = error.context("upload of a.bin");
        assert_eq!(one_line(&wrapped), "upload of a.bin: connection failed: bad certificate");
    }

    #[test]
    fn causes_that_are_not_repeated_are_all_kept() {
        let error = anyhow::Error::new(io("disk full")).context("cannot write a.bin");
        assert_eq!(one_line(&error), "cannot write a.bin: disk full");
    }
}
