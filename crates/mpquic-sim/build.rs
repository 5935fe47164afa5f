//! Records the git commit the simulator is built from (`MPQUIC_SIM_COMMIT`): a sweep's
//! partial results name it, and `mpquic-sim merge` refuses partials of different builds.

use std::process::Command;

/// `git <args>`'s first line of output, if git runs and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| text.lines().next().unwrap_or_default().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MPQUIC_SIM_COMMIT={commit}");
    // Build again when HEAD moves: the file HEAD, and the branch it names (loose or packed).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
