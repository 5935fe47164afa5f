//! `mpquic cert`: certificates for labs, with private keys readable by their owner only.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use mpquic::{CertRole, Identity, PemPair};

use crate::args::CertArgs;

/// Write what `args` asks for into `args.out`.
pub fn write_cert(args: &CertArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let (pair, cert_name, key_name) = if args.new_ca {
        let name = args.names.first().map_or("mpquic lab CA", String::as_str);
        (PemPair::new_lab_ca(name)?, "ca.pem", "ca-key.pem")
    } else if let Some(ca_dir) = &args.ca_dir {
        let read = |name: &str| {
            let path = ca_dir.join(name);
            std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))
        };
        let ca = PemPair { cert: read("ca.pem")?, key: read("ca-key.pem")? };
        let role = if args.client { CertRole::Client } else { CertRole::Server };
        (ca.issue(&args.names, role)?, "cert.pem", "key.pem")
    } else {
        let (cert, key) = Identity::self_signed_pem(&args.names)?;
        (PemPair { cert, key }, "cert.pem", "key.pem")
    };
    let cert_path = args.out.join(cert_name);
    std::fs::write(&cert_path, &pair.cert)
        .with_context(|| format!("cannot write {}", cert_path.display()))?;
    let key_path = args.out.join(key_name);
    write_private(&key_path, &pair.key)
        .with_context(|| format!("cannot write {}", key_path.display()))?;
    eprintln!("mpquic: wrote {} and {} (mode 0600)", cert_path.display(), key_path.display());
    Ok(())
}

/// Write `text` to `path` readable and writable by the owner only, also when it existed.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode through open(): narrow it before the key goes in.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes())
}
