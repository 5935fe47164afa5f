//! What the library's end-to-end tests share: addresses, and a UDP relay that can black-hole a
//! path.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::net::UdpSocket;

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Forwards datagrams between one client and `server` while `forwarding` is set; drops them
/// (both ways) while it is not. Returns the address the client sends to.
pub async fn relay(bind: IpAddr, server: SocketAddr, forwarding: Arc<AtomicBool>) -> SocketAddr {
    let front = Arc::new(UdpSocket::bind(SocketAddr::new(bind, 0)).await.unwrap());
    let back = Arc::new(UdpSocket::bind(SocketAddr::new(bind, 0)).await.unwrap());
    let address = front.local_addr().unwrap();
    let (client_tx, mut client_rx) = tokio::sync::watch::channel(None::<SocketAddr>);
    let (f, b, on) = (front.clone(), back.clone(), forwarding.clone());
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = f.recv_from(&mut buf).await {
            client_tx.send_replace(Some(from));
            if on.load(Ordering::Relaxed) {
                let _ = b.send_to(&buf[..n], server).await;
            }
        }
    });
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, _)) = back.recv_from(&mut buf).await {
            let client = *client_rx.borrow_and_update();
            if let (Some(client), true) = (client, forwarding.load(Ordering::Relaxed)) {
                let _ = front.send_to(&buf[..n], client).await;
            }
        }
    });
    address
}
