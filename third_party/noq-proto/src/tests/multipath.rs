//! Tests for multipath

use alloc::{boxed::Box, format, sync::Arc, vec, vec::Vec};
use core::{net::SocketAddr, num::NonZeroU32, time::Duration};
use std::dbg;

use assert_matches::assert_matches;
use testresult::TestResult;
use tracing::info;

use crate::connection::timer::{PathTimer, Timer};
use crate::{
    ClientConfig, ConnectionId, ConnectionIdGenerator, Endpoint, EndpointConfig, FourTuple,
    LOCAL_CID_COUNT, NetworkChangeHint, PathId, PathStatus, RandomConnectionIdGenerator,
    ServerConfig, Side::*, StreamId, TransportConfig, cid_queue::CidQueue,
};
use crate::{
    ClosePathError, Dir, Event, PathAbandonReason, PathEvent, StreamEvent, TransportErrorCode,
    n0_nat_traversal,
};

use super::util::{
    ConnPair, ManyToManyRouting, Pair, SimpleFirewallRouting, client_config, min_opt,
    server_config, subscribe,
};

const MAX_PATHS: u32 = 3;

#[test]
fn non_zero_length_cids() {
    let _guard = subscribe();
    let multipath_transport_cfg = Arc::new(TransportConfig {
        max_concurrent_multipath_paths: NonZeroU32::new(3 as _),
        // Assume a low-latency connection so pacing doesn't interfere with the test
        initial_rtt: Duration::from_millis(10),
        ..TransportConfig::default()
    });
    let server_cfg = Arc::new(ServerConfig {
        transport: multipath_transport_cfg.clone(),
        ..server_config()
    });
    let server = Endpoint::new(Default::default(), Some(server_cfg), true);

    struct ZeroLenCidGenerator;

    impl ConnectionIdGenerator for ZeroLenCidGenerator {
        fn generate_cid(&mut self) -> ConnectionId {
            ConnectionId::new(&[])
        }

        fn cid_len(&self) -> usize {
            0
        }

        fn cid_lifetime(&self) -> Option<Duration> {
            None
        }
    }

    let mut ep_config = EndpointConfig::default();
    ep_config.cid_generator(Arc::new(|| Box::new(ZeroLenCidGenerator)));
    let client = Endpoint::new(Arc::new(ep_config), None, true);

    let mut pair = Pair::new_from_endpoint(client, server);
    let client_cfg = ClientConfig {
        transport: multipath_transport_cfg,
        ..client_config()
    };
    pair.begin_connect(client_cfg);
    pair.drive();
    let accept_err = pair
        .server
        .accepted
        .take()
        .expect("server didn't try connecting")
        .expect_err("server did not raise error for connection");
    match accept_err {
        crate::ConnectionError::TransportError(error) => {
            assert_eq!(error.code, TransportErrorCode::PROTOCOL_VIOLATION);
        }
        _ => panic!("Not a TransportError"),
    }
}

#[test]
fn path_acks() {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let stats = pair.stats(Client);
    assert!(stats.frame_rx.path_acks > 0);
    assert!(stats.frame_tx.path_acks > 0);
}

#[test]
fn path_status() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let prev_status = pair.set_path_status(Client, PathId::ZERO, PathStatus::Backup)?;
    assert_eq!(prev_status, PathStatus::Available);

    // Send the frame to the server
    pair.drive();

    assert_eq!(
        pair.remote_path_status(Server, PathId::ZERO),
        Some(PathStatus::Backup)
    );

    let client_stats = pair.stats(Client);
    assert_eq!(client_stats.frame_tx.path_status_available, 0);
    assert_eq!(client_stats.frame_tx.path_status_backup, 1);
    assert_eq!(client_stats.frame_rx.path_status_available, 0);
    assert_eq!(client_stats.frame_rx.path_status_backup, 0);

    let server_stats = pair.stats(Server);
    assert_eq!(server_stats.frame_tx.path_status_available, 0);
    assert_eq!(server_stats.frame_tx.path_status_backup, 0);
    assert_eq!(server_stats.frame_rx.path_status_available, 0);
    assert_eq!(server_stats.frame_rx.path_status_backup, 1);
    Ok(())
}

#[test]
fn path_close_last_path() {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Closing the last path via the local API is not allowed.
    // Use Connection::close() to end the connection instead.
    assert_matches!(
        pair.close_path(Client, PathId::ZERO, 0u8.into()),
        Err(ClosePathError::LastOpenPath)
    );

    // Connection should still be alive
    assert!(!pair.is_closed(Client));
    assert!(!pair.is_closed(Server));
}

#[test]
fn cid_issued_multipath() {
    let _guard = subscribe();
    const ACTIVE_CID_LIMIT: u64 = CidQueue::LEN as _;
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let client_stats = pair.stats(Client);
    dbg!(&client_stats);

    // The client does not send NEW_CONNECTION_ID frames when multipath is enabled as they
    // are all sent after the handshake is completed.
    assert_eq!(client_stats.frame_tx.new_connection_id, 0);
    assert_eq!(
        client_stats.frame_tx.path_new_connection_id,
        MAX_PATHS as u64 * ACTIVE_CID_LIMIT
    );

    // The server sends NEW_CONNECTION_ID frames before the handshake is completed.
    // Multipath is only enabled *after* the handshake completes.  The first server-CID is
    // not issued but assigned by the client and changed by the server.
    assert_eq!(
        client_stats.frame_rx.new_connection_id,
        ACTIVE_CID_LIMIT - 1
    );
    assert_eq!(
        client_stats.frame_rx.path_new_connection_id,
        (MAX_PATHS - 1) as u64 * ACTIVE_CID_LIMIT
    );
}

#[test]
fn multipath_cid_rotation() {
    let _guard = subscribe();
    const CID_TIMEOUT: Duration = Duration::from_secs(2);

    let cid_generator_factory: fn() -> Box<dyn ConnectionIdGenerator> =
        || Box::new(*RandomConnectionIdGenerator::new(8).set_lifetime(CID_TIMEOUT));

    // Only test cid rotation on server side to have a clear output trace
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .with_server_endpoint_cfg(EndpointConfig {
            connection_id_generator_factory: Arc::new(cid_generator_factory),
            ..Default::default()
        })
        .connect();

    let mut round: u64 = 1;
    let mut stop = pair.time;
    let end = pair.time + 5 * CID_TIMEOUT;

    let mut active_cid_num = CidQueue::LEN as u64 + 1;
    active_cid_num = active_cid_num.min(LOCAL_CID_COUNT);
    let mut left_bound = 0;
    let mut right_bound = active_cid_num - 1;

    while pair.time < end {
        stop += CID_TIMEOUT;
        // Run a while until PushNewCID timer fires
        while pair.time < stop {
            if !pair.step()
                && let Some(time) = min_opt(pair.client.next_wakeup(), pair.server.next_wakeup())
            {
                pair.time = time;
            }
        }
        info!(
            "Checking active cid sequence range before {:?} seconds",
            round * CID_TIMEOUT.as_secs()
        );
        let _bound = (left_bound, right_bound);
        for path_id in 0..MAX_PATHS {
            assert_matches!(pair.conn(Server).active_local_path_cid_seq(path_id), _bound);
        }
        round += 1;
        left_bound += active_cid_num;
        right_bound += active_cid_num;
        pair.drive_server();
    }

    let stats = pair.stats(Server);

    // Server sends CIDs for PathId::ZERO before multipath is negotiated.
    assert_eq!(stats.frame_tx.new_connection_id, (CidQueue::LEN - 1) as u64);

    // For the first batch the PathId::ZERO CIDs have already been sent.
    let initial_batch: u64 = (MAX_PATHS - 1) as u64 * CidQueue::LEN as u64;
    // Each round expires all CIDs, so they all get re-issued.
    let each_round: u64 = MAX_PATHS as u64 * CidQueue::LEN as u64;
    // The final round only pushes one set of CIDs with expires_before, the round is not run
    // to completion to wait for the expiry messages from the client.
    let final_round: u64 = MAX_PATHS as u64;
    let path_new_cids = initial_batch + (round - 2) * each_round + final_round;
    debug_assert_eq!(path_new_cids, 73);
    assert_eq!(stats.frame_tx.path_new_connection_id, path_new_cids);

    // We don't retire any CIDs before multipath is negotiated.
    assert_eq!(stats.frame_tx.retire_connection_id, 0);

    // Server expires the CID of the initial sent by the client.
    assert_eq!(stats.frame_tx.path_retire_connection_id, 1);

    // Client only sends CIDs after multipath is negotiated.
    assert_eq!(stats.frame_rx.new_connection_id, 0);

    // Client does not expire CIDs, only the initial set for all the paths.
    assert_eq!(
        stats.frame_rx.path_new_connection_id,
        MAX_PATHS as u64 * CidQueue::LEN as u64
    );
    assert_eq!(stats.frame_rx.retire_connection_id, 0);

    // Test stops before last batch of retirements is sent.
    let path_retire_cids = MAX_PATHS as u64 * CidQueue::LEN as u64 * (round - 2);
    debug_assert_eq!(path_retire_cids, 60);
    assert_eq!(stats.frame_rx.path_retire_connection_id, path_retire_cids);
}

#[test]
fn issue_max_path_id() -> TestResult {
    let _guard = subscribe();

    // We enable multipath but initially do not allow any paths to be opened.
    // The client is allowed to create more paths immediately.
    let mut builder = ConnPair::builder().enable_multipath();
    builder
        .server_transport_cfg
        .max_concurrent_multipath_paths(1);
    let mut pair = builder.connect();

    pair.drive();
    info!("connected");

    // Server should only have sent NEW_CONNECTION_ID frames for now.
    let server_new_cids = CidQueue::LEN as u64 - 1;
    let mut server_path_new_cids = 0;
    let stats = pair.stats(Server);
    assert_eq!(stats.frame_tx.max_path_id, 0);
    assert_eq!(stats.frame_tx.new_connection_id, server_new_cids);
    assert_eq!(stats.frame_tx.path_new_connection_id, server_path_new_cids);

    // Client should have sent PATH_NEW_CONNECTION_ID frames for PathId::ZERO.
    let client_new_cids = 0;
    let mut client_path_new_cids = CidQueue::LEN as u64;
    assert_eq!(stats.frame_rx.new_connection_id, client_new_cids);
    assert_eq!(stats.frame_rx.path_new_connection_id, client_path_new_cids);

    // Server increases MAX_PATH_ID.
    pair.set_max_concurrent_paths(Server, MAX_PATHS)?;
    pair.drive();
    let stats = pair.stats(Server);

    // Server should have sent MAX_PATH_ID and new CIDs
    server_path_new_cids += (MAX_PATHS as u64 - 1) * CidQueue::LEN as u64;
    assert_eq!(stats.frame_tx.max_path_id, 1);
    assert_eq!(stats.frame_tx.new_connection_id, server_new_cids);
    assert_eq!(stats.frame_tx.path_new_connection_id, server_path_new_cids);

    // Client should have sent CIDs for new paths
    client_path_new_cids += (MAX_PATHS as u64 - 1) * CidQueue::LEN as u64;
    assert_eq!(stats.frame_rx.new_connection_id, client_new_cids);
    assert_eq!(stats.frame_rx.path_new_connection_id, client_path_new_cids);

    Ok(())
}

/// A copy of [`issue_max_path_id`], but reordering the `MAX_PATH_ID` frame
/// that's sent from the server to the client, so that some `NEW_CONNECTION_ID`
/// frames arrive with higher path IDs than the most recently received
/// `MAX_PATH_ID` frame on the client side.
#[test]
fn issue_max_path_id_reordered() -> TestResult {
    let _guard = subscribe();

    // We enable multipath but initially do not allow any paths to be opened.
    // The client is allowed to create more paths immediately.
    let mut builder = ConnPair::builder().enable_multipath();
    builder
        .server_transport_cfg
        .max_concurrent_multipath_paths(1);
    let mut pair = builder.connect();

    pair.drive();
    info!("connected");

    // Server should only have sent NEW_CONNECTION_ID frames for now.
    let server_new_cids = CidQueue::LEN as u64 - 1;
    let mut server_path_new_cids = 0;
    let stats = pair.stats(Server);
    assert_eq!(stats.frame_tx.max_path_id, 0);
    assert_eq!(stats.frame_tx.new_connection_id, server_new_cids);
    assert_eq!(stats.frame_tx.path_new_connection_id, server_path_new_cids);

    // Client should have sent PATH_NEW_CONNECTION_ID frames for PathId::ZERO.
    let client_new_cids = 0;
    let mut client_path_new_cids = CidQueue::LEN as u64;
    assert_eq!(stats.frame_rx.new_connection_id, client_new_cids);
    assert_eq!(stats.frame_rx.path_new_connection_id, client_path_new_cids);

    // Server increases MAX_PATH_ID, but we reorder the frame
    pair.set_max_concurrent_paths(Server, MAX_PATHS)?;
    pair.drive_server();
    // reorder the frames on the incoming side
    pair.reorder_inbound(Client);
    pair.drive();
    let stats = pair.stats(Server);

    // Server should have sent MAX_PATH_ID and new CIDs
    server_path_new_cids += (MAX_PATHS as u64 - 1) * CidQueue::LEN as u64;
    assert_eq!(stats.frame_tx.max_path_id, 1);
    assert_eq!(stats.frame_tx.new_connection_id, server_new_cids);
    assert_eq!(stats.frame_tx.path_new_connection_id, server_path_new_cids);

    // Client should have sent CIDs for new paths
    client_path_new_cids += (MAX_PATHS as u64 - 1) * CidQueue::LEN as u64;
    assert_eq!(stats.frame_rx.new_connection_id, client_new_cids);
    assert_eq!(stats.frame_rx.path_new_connection_id, client_path_new_cids);

    Ok(())
}

#[test]
fn open_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );

    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );
    Ok(())
}

#[test]
fn open_path_key_update() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;

    // Do a key-update at the same time as opening the new path.
    pair.force_key_update(Client);

    pair.drive();
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );

    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );
    Ok(())
}

/// Client starts opening a path but the server fails to validate the path
///
/// The client should receive an event closing the path.
#[test]
fn open_path_validation_fails_server_side() -> TestResult {
    let _guard = subscribe();
    let client_addr_two = "[::1:2]:1".parse()?;
    let server_addr_two = "[::2:2]:1".parse()?;
    let mut builder = ConnPair::builder()
        .enable_multipath()
        .disable_mtud_discovery()
        .with_routes(
            // server_addr_two can send to client_addr_two, but the reverse is broken.
            ManyToManyRouting::from_routes(
                [(Pair::CLIENT_ADDR, 0), (client_addr_two, 1)],
                [(Pair::SERVER_ADDR, 0), (server_addr_two, 0)],
            ),
        );
    builder
        .server_transport_cfg
        .default_path_max_idle_timeout(Some(Duration::from_secs(8)));
    builder
        .client_transport_cfg
        .default_path_max_idle_timeout(Some(Duration::from_secs(8)));
    let mut pair = builder.connect();

    // Open a path from ::1:2 to ::2:2. Client datagrams will arrive from ::1:2 which is not
    // allowed so they will be dropped.
    let network_path = FourTuple {
        remote: server_addr_two,
        local_ip: Some(client_addr_two.ip()),
    };
    let path_id = pair.open_path(Client, network_path, PathStatus::Available)?;

    info!("client opens path, drive to just before idle");
    pair.drive();

    info!("manual keep-alive of PathId::ZERO");
    pair.ping_path(Client, PathId::ZERO)?;
    // Sent here, before the clock moves: `drive_until_timer` advances time before it
    // drives, so a queued keep-alive would otherwise go out at the deadline itself.
    pair.drive();

    info!("advancing time to past client path {path_id} idle");
    pair.drive_until_timer(Client, Timer::PerPath(path_id, PathTimer::PathIdle));
    // Deliver the abandonment to the server: the timer fires while driving the client, and
    // the loop drives the server before that packet arrives. Without this step the
    // `poll(Server)` check below would pass simply because the server never heard about it.
    pair.drive();

    // The client gave up first and timed out.
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned { id, reason: PathAbandonReason::TimedOut  }))
            if id == path_id
    );
    // The server sees a closed path being abandoned, never emits this to the application.
    assert_matches!(pair.poll(Server), None);
    Ok(())
}

/// client starts opening a path but the client fails to validate the path
///
/// The server should receive an event close the path
#[test]
fn open_path_validation_fails_client_side() -> TestResult {
    let _guard = subscribe();
    let client_addr_two = "[::1:2]:1".parse()?;
    let server_addr_two = "[::2:2]:1".parse()?;
    let mut builder = ConnPair::builder()
        .enable_multipath()
        .disable_mtud_discovery()
        .with_routes(
            // client_addr_two can send to server_addr_two, but the reverse is broken.
            ManyToManyRouting::from_routes(
                [(Pair::CLIENT_ADDR, 0), (client_addr_two, 0)],
                [(Pair::SERVER_ADDR, 0), (server_addr_two, 1)],
            ),
        );
    builder
        .server_transport_cfg
        .default_path_max_idle_timeout(Some(Duration::from_secs(30)));
    builder
        .client_transport_cfg
        .default_path_max_idle_timeout(Some(Duration::from_secs(30)));
    let mut pair = builder.connect();

    // Open a path from ::1:2 to ::2:2. Client datagrams can be routed. Server datagrams
    // will arrive at ::1:2 from ::2:2, but only ::2:1 is allowed to send to ::1:2, so
    // server datagrams will be dropped.
    let network_path = FourTuple {
        remote: server_addr_two,
        local_ip: None,
    };
    let path_id = pair.open_path(Client, network_path, PathStatus::Available)?;

    info!("client opens path, drive to just before idle");
    pair.drive();

    info!("manual keep-alive of PathId::ZERO");
    pair.ping_path(Client, PathId::ZERO)?;

    info!("drive past new path idle");
    pair.drive();

    // The client gave up first and timed out.
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned { id, reason: PathAbandonReason::TimedOut  }))
            if id == path_id
    );
    // Server would also fail to validate, but the client already abandoned.
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Abandoned {
            id,
            reason: PathAbandonReason::RemoteAbandoned { .. }
        }))
        if id == path_id
    );
    Ok(())
}

/// Client opens a path, then abandons, then calls open_path_ensure.
///
/// In the end there should be an open path.
#[test]
fn open_path_ensure_after_abandon() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();
    let mut second_client_addr = pair.routes.as_basic().client_addr;
    let mut second_server_addr = pair.routes.as_basic().server_addr;
    second_client_addr.set_port(second_client_addr.port() + 1);
    second_server_addr.set_port(second_server_addr.port() + 1);
    pair.routes = ManyToManyRouting::simple_symmetric(
        [pair.routes.as_basic().client_addr, second_client_addr],
        [pair.routes.as_basic().server_addr, second_server_addr],
    )
    .into();

    let second_path = FourTuple {
        local_ip: Some(second_client_addr.ip()),
        remote: second_server_addr,
    };

    info!("opening path 1");
    let path_id = pair.open_path(Client, second_path, PathStatus::Available)?;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );

    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );

    info!("closing path {path_id}");
    pair.close_path(Client, path_id, 0u8.into())?;
    pair.drive();

    // The path should be closed:
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned {
            id,
            reason: PathAbandonReason::ApplicationClosed { error_code }
        }))
            if id == path_id && error_code == 0u8.into()
    );

    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Abandoned {
            id,
            reason: PathAbandonReason::RemoteAbandoned { error_code }
        }))
            if id == path_id && error_code == 0u8.into()
    );

    pair.drive();

    // The path should be discarded:
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Discarded { id, .. })) if id == path_id
    );

    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Discarded { id, .. })) if id == path_id
    );

    info!("opening path 2");
    let (path_id, existed) = pair.open_path_ensure(Client, second_path, PathStatus::Available)?;
    pair.drive();

    assert!(!existed);

    // The path should have been opened:
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );

    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );
    Ok(())
}

#[test]
fn close_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();
    assert_ne!(path_id, PathId::ZERO);

    let stats0 = pair.stats(Client);
    assert_eq!(stats0.frame_tx.path_abandon, 0);
    assert_eq!(stats0.frame_rx.path_abandon, 0);
    assert_eq!(stats0.frame_tx.max_path_id, 0);
    assert_eq!(stats0.frame_rx.max_path_id, 0);

    info!("closing path 0");
    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive();

    let stats1 = pair.stats(Client);
    assert_eq!(stats1.frame_tx.path_abandon, 1);
    assert_eq!(stats1.frame_rx.path_abandon, 1);
    assert_eq!(stats1.frame_tx.max_path_id, 1);
    assert_eq!(stats1.frame_rx.max_path_id, 1);
    assert!(stats1.frame_tx.path_new_connection_id > stats0.frame_tx.path_new_connection_id);
    assert!(stats1.frame_rx.path_new_connection_id > stats0.frame_rx.path_new_connection_id);
    Ok(())
}

/// Regression: We never emit [`PathEvent::Established`] after [`PathEvent::Abandoned`].
///
/// It may happen that a PATH_RESPONSE validating a path is received after a
/// PATH_ABANDON (due to reordering or the different path latencies). We used to
/// emit a [`PathEvent::Establish`] *after* [`PathEvent::Abandoned`], which makes
/// no sense. This was fixed, and this test ensures that this doesn't happen again.
#[test]
fn no_establish_after_abandon() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    assert_ne!(path_id, PathId::ZERO);

    // Client sends PATH_CHALLENGE
    pair.drive_client();
    pair.advance_time();
    // Server receives PATH_CHALLENGE and replies with PATH_RESPONSE and its
    // own PATH_CHALLENGE. Server has *not* validated the path yet.
    pair.drive_server();
    pair.advance_time();
    // Client receives PATH_RESPONSE and PATH_CHALLENGE. It has now validated
    // the path, and sends a PATH_RESPONSE. We hold back the packet containing
    // the PATH_RESPONSE.
    pair.drive_client();
    let withheld: Vec<_> = pair.server.inbound.drain().collect();
    assert!(
        !withheld.is_empty(),
        "expected the client's PATH_RESPONSE to be in flight"
    );

    // Now abandon the path on the client and deliver the PATH_ABANDON frame to
    // the server.
    pair.close_path(Client, path_id, 0u8.into())?;
    pair.advance_time();
    pair.drive_client();
    pair.drive_server();

    // Now deliver the withheld PATH_RESPONSE. It validates the *already
    // abandoned* path.
    let now = pair.time;
    for (_, pkt) in withheld {
        pair.server.inbound.push(now, pkt);
    }
    pair.advance_time();
    pair.drive_client();
    pair.drive_server();

    // On the client, we get Established and then Abandoned
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id }))
        if id == path_id
    );
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned {
            id,
            reason: PathAbandonReason::ApplicationClosed { .. }
        }))
        if id == path_id
    );
    assert_matches!(pair.poll(Client), None);

    // Server only gets a PathEvent::Abandoned. This is the actual regression test:
    // Before the fix, we would get a PathEvent::Established after Abandoned.
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Abandoned {
            id,
            reason: PathAbandonReason::RemoteAbandoned { .. }
        }))
        if id == path_id
    );
    assert_matches!(pair.poll(Server), None);

    Ok(())
}

#[test]
fn close_last_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();
    assert_ne!(path_id, PathId::ZERO);

    info!("client closes path 0");
    pair.close_path(Client, PathId::ZERO, 0u8.into())?;

    info!("server closes path 1");
    pair.close_path(Server, PathId(1), 0u8.into())?;

    pair.drive();

    assert!(pair.is_closed(Server));
    assert!(pair.is_closed(Client));
    Ok(())
}

#[test]
fn per_path_observed_address() -> TestResult {
    let _guard = subscribe();
    // create the endpoint pair with both address discovery and multipath enabled
    let transport_cfg = TransportConfig {
        max_concurrent_multipath_paths: NonZeroU32::new(MAX_PATHS),
        address_discovery_role: crate::address_discovery::Role::both(),
        ..TransportConfig::default()
    };
    let (mut pair, client_events, _server_events) = ConnPair::builder()
        .with_transport_cfg(transport_cfg)
        .lax_connect();

    info!("connected");
    pair.drive();

    let first_addr = pair.routes.as_basic().client_addr;
    let first_server_addr = pair.routes.as_basic().server_addr;
    let mut second_client_addr = first_addr;
    let mut second_server_addr = first_server_addr;
    second_client_addr.set_port(second_client_addr.port() + 1);
    second_server_addr.set_port(second_server_addr.port() + 1);
    pair.routes = ManyToManyRouting::simple_symmetric(
        [first_addr, second_client_addr],
        [first_server_addr, second_server_addr],
    )
    .into();

    let second_path = FourTuple {
        local_ip: Some(second_client_addr.ip()),
        remote: second_server_addr,
    };
    let path_id = pair.open_path(Client, second_path, PathStatus::Available)?;
    pair.drive();

    let mut found_first = false;
    let mut found_second = false;
    let post_connect_events = core::iter::from_fn(|| pair.poll(Client));
    for event in client_events.into_iter().chain(post_connect_events) {
        if let Event::Path(PathEvent::ObservedAddr { id, addr }) = event {
            if id == PathId::ZERO && addr == first_addr {
                found_first = true;
            } else if id == path_id && addr == second_client_addr {
                found_second = true;
            }
        }
    }
    assert!(found_first);
    assert!(found_second);

    Ok(())
}

#[test]
fn mtud_on_two_paths() -> TestResult {
    let _guard = subscribe();

    let mut builder = ConnPair::builder()
        .with_mtu(1200) // Start with a small MTU
        .enable_multipath();
    builder.server_transport_cfg.max_idle_timeout = None;
    builder.client_transport_cfg.max_idle_timeout = None;
    let mut pair = builder.connect();

    assert_eq!(pair.conn(Client).path_mtu(PathId::ZERO), 1200);

    // Open a 2nd path.
    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    // Ensure the path opened correctly.
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );

    // MTU should be 1200 for both paths.
    assert_eq!(pair.conn(Client).path_mtu(PathId::ZERO), 1200);
    assert_eq!(pair.conn(Client).path_mtu(path_id), 1200);

    // The default MtuDiscoveryConfig::upper_bound is 1452, the default
    // MtuDiscoveryConfig::interval is 600s.
    pair.mtu = 1452;
    pair.time += Duration::from_secs(600);
    info!("Bumping MTU to: {}", pair.mtu);
    pair.drive();

    info!("MTU Path 0: {}", pair.conn(Client).path_mtu(PathId::ZERO));
    info!(
        "MTU Path {}: {}",
        path_id,
        pair.conn(Client).path_mtu(path_id)
    );

    // Both paths should have found the new MTU.
    assert_eq!(pair.conn(Client).path_mtu(PathId::ZERO), 1452);
    assert_eq!(pair.conn(Client).path_mtu(path_id), 1452);
    Ok(())
}

/// Closing a path locally may be rejected if this leaves the endpoint without validated paths. For
/// paths closed by the remote, however, a `PATH_ABANDON` frame must be accepted. In
/// particular, it should not kill the connection.
///
/// This is a regression test.
#[test]
fn remote_can_close_last_validated_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    pair.routes.as_basic_mut().passive_migration(Client);
    let route = FourTuple {
        remote: pair.routes.public_server_addr(),
        local_ip: None,
    };
    pair.open_path(Client, route, PathStatus::Available)?;
    pair.drive_client();
    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive();

    // Neither side of the connection should error on close
    let mut close = None;
    for side in [Client, Server] {
        while let Some(event) = pair.poll(side) {
            if let Event::ConnectionLost { reason } = event {
                close = Some(reason);
            }
        }
        assert_eq!(close, None);
    }

    Ok(())
}

/// With multipath and hint=None, the client defaults to non-recoverable: the old path is closed
/// with PATH_UNSTABLE_OR_POOR and a new path is opened. Data still flows on the new path.
#[test]
fn network_change_multipath_no_hint_replaces_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Simulate a passive migration + network change with no hint
    pair.routes.as_basic_mut().passive_migration(Client);
    pair.handle_network_change(Client, None);

    pair.drive();

    // A new path should be opened and the old one should be closed
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned {
            id: PathId(0),
            reason: PathAbandonReason::UnusableAfterNetworkChange
        }))
    );
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id: PathId(1) }))
    );

    // The server sees the old path closed with PATH_UNSTABLE_OR_POOR
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Abandoned {
            id: PathId::ZERO,
            reason: PathAbandonReason::RemoteAbandoned { error_code }
        }))
        if error_code == TransportErrorCode::PATH_UNSTABLE_OR_POOR.into()
    );
    // And then sees the new path
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id: PathId(1) }))
    );
    // Both client and server see the old path as discarded
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Discarded {
            id: PathId::ZERO,
            ..
        }))
    );
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Discarded {
            id: PathId::ZERO,
            ..
        }))
    );

    // Data should flow on the new path
    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    const MSG: &[u8] = b"after network change";
    pair.send_stream(Client, s).write(MSG).unwrap();
    pair.send_stream(Client, s).finish().unwrap();
    pair.drive();

    assert_matches!(
        pair.poll(Server),
        Some(Event::Stream(StreamEvent::Opened { dir: Dir::Uni }))
    );
    assert_matches!(pair.streams(Server).accept(Dir::Uni), Some(stream) if stream == s);
    let mut recv = pair.recv_stream(Server, s);
    let mut chunks = recv.read(false).unwrap();
    assert_matches!(
        chunks.next(usize::MAX),
        Ok(Some(chunk)) if chunk.bytes == MSG
    );
    let _ = chunks.finalize();

    Ok(())
}

/// With two paths open and a selective hint, only the non-recoverable path gets replaced.
/// The recoverable path is kept and pinged for liveness.
#[test]
fn network_change_selective_hint() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Open a second path
    let server_addr = pair.routes.public_server_addr();
    let second_path = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id })) if id == second_path
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id })) if id == second_path
    );

    // A hint that says PathId::ZERO is recoverable but the second path is not
    #[derive(Debug)]
    struct SelectiveHint(PathId);
    impl NetworkChangeHint for SelectiveHint {
        fn is_path_recoverable(&self, path_id: PathId, _network_path: FourTuple) -> bool {
            path_id == self.0
        }
    }
    let hint = SelectiveHint(PathId::ZERO);

    pair.routes.as_basic_mut().passive_migration(Client);
    pair.handle_network_change(Client, Some(&hint));

    pair.drive();

    // The second path (non-recoverable) should be replaced: a new path opens
    // PathId::ZERO (recoverable) should stay open (no Closed event for it)
    let mut client_events = Vec::new();
    while let Some(event) = pair.poll(Client) {
        client_events.push(event);
    }

    // There should be an Opened event for the replacement path
    assert!(
        client_events
            .iter()
            .any(|e| matches!(e, Event::Path(PathEvent::Established { .. }))),
        "expected an Opened event for the replacement path, got: {client_events:?}"
    );
    // PathId::ZERO should NOT have been closed
    assert!(
        !client_events.iter().any(|e| matches!(
            e,
            Event::Path(PathEvent::Discarded {
                id: PathId::ZERO,
                ..
            })
        )),
        "PathId::ZERO should not have been closed: {client_events:?}"
    );

    Ok(())
}

/// Server-side network change with two paths and a selective hint.
///
/// The non-recoverable path is abandoned, leaving only the recoverable one.
#[test]
fn network_change_server_two_paths_selective_hint() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Open a second path from the client side.
    let server_addr = pair.routes.public_server_addr();
    let second_path = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id })) if id == second_path
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id })) if id == second_path
    );

    // Hint: The provided PathId is recoverable, others are not.
    #[derive(Debug)]
    struct SelectiveHint(PathId);
    impl NetworkChangeHint for SelectiveHint {
        fn is_path_recoverable(&self, path_id: PathId, _network_path: FourTuple) -> bool {
            path_id == self.0
        }
    }

    // Signal network change without actually changing the server's local address. This
    // means the client will not see an actual network change and keep accepting the packets
    // from the server. If the server's address would change it would discard the server's
    // packets since the server may not migrate.
    pair.handle_network_change(Server, Some(&SelectiveHint(second_path)));

    pair.drive();

    // The non-recoverable path is abandoned on the server. No replacement opens because
    // servers cannot call open_path.
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Abandoned {
            id,
            reason: PathAbandonReason::UnusableAfterNetworkChange,
        })) if id == PathId::ZERO
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Discarded { id, .. })) if id == PathId::ZERO
    );
    assert_matches!(pair.poll(Server), None);

    // The client sees PathId::ZERO abandoned by the remote, then discards it.
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned {
            id: PathId::ZERO,
            reason: PathAbandonReason::RemoteAbandoned { .. },
        }))
    );
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Discarded {
            id: PathId::ZERO,
            ..
        }))
    );
    assert_matches!(pair.poll(Client), None);

    Ok(())
}

/// Server-side network change with a single path and a non-recoverable hint.
///
/// The path cannot be closed because it is the last one.
#[test]
fn network_change_server_single_path_non_recoverable_falls_back() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Hint that says all paths are non-recoverable
    #[derive(Debug)]
    struct NonRecoverableHint;
    impl NetworkChangeHint for NonRecoverableHint {
        fn is_path_recoverable(&self, _path_id: PathId, _network_path: FourTuple) -> bool {
            false
        }
    }

    // Signal network change without actually changing the server's local address. This
    // means the client will not see an actual network change and keep accepting the packets
    // from the server. If the server's address would change it would discard the server's
    // packets since the server may not migrate.
    pair.handle_network_change(Server, Some(&NonRecoverableHint));
    pair.drive();

    // The path should NOT be abandoned. The last open path cannot be closed.
    assert_matches!(pair.poll(Server), None);
    assert_matches!(pair.poll(Client), None);

    Ok(())
}

/// Server-side network change with no hint defaults to recoverable. Both paths stay open.
#[test]
fn network_change_server_no_hint_recovers() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Open a second path from the client side.
    let server_addr = pair.routes.public_server_addr();
    let second_path = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id })) if id == second_path
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id })) if id == second_path
    );

    // Signal network change without actually changing the server's local address. This
    // means the client will not see an actual network change and keep accepting the packets
    // from the server. If the server's address would change it would discard the server's
    // packets since the server may not migrate.
    pair.handle_network_change(Server, None);
    pair.drive();

    // No path events: the server defaults to recoverable when no hint is provided.
    // Neither path should be abandoned.
    assert_matches!(pair.poll(Server), None);
    assert_matches!(pair.poll(Client), None);

    Ok(())
}

/// Checks that the deadline given before a path fails to be considered open start only when the
/// first packet is sent.
///
/// This is a regression test. See <https://github.com/n0-computer/noq/issues/435>
#[test]
fn path_open_deadline_is_set_on_send() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;

    // Fast-forward time well past 3×PTO without letting any transmit happen on the new
    // path.
    let far_future = pair.time + Duration::from_secs(5);
    pair.handle_timeout(Client, far_future);

    assert!(
        pair.poll(Client).is_none(),
        "path was abandoned before any challenge was sent (issue #456)"
    );

    // Now let the challenge be sent and the path to be opened.
    pair.time = far_future;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id })) if id == path_id,
        "path should open successfully after the challenge is sent"
    );

    Ok(())
}

#[test]
fn path_scheduling_path_status() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    info!("Setting Path 0 to PathStatus::Backup");
    let prev_status = pair.set_path_status(Client, PathId::ZERO, PathStatus::Backup)?;
    assert_eq!(prev_status, PathStatus::Available);

    // Send the frame to the server
    pair.drive();

    assert_eq!(
        pair.remote_path_status(Server, PathId::ZERO),
        Some(PathStatus::Backup)
    );

    info!("Opening Path 1 with PathStatus::Available");
    let server_addr = pair.routes.public_server_addr();
    let path_1 = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    let stats_path0_t0 = pair.conn_mut(Client).path_stats(PathId::ZERO).unwrap();
    let stats_path1_t0 = pair.conn_mut(Client).path_stats(path_1).unwrap();

    info!("Sending STREAM frame");
    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    pair.send_stream(Client, s).write(b"hello").unwrap();
    pair.drive();

    let stats_path0_t1 = pair.conn_mut(Client).path_stats(PathId::ZERO).unwrap();
    let stats_path1_t1 = pair.conn_mut(Client).path_stats(path_1).unwrap();

    info!("assert");
    assert!((stats_path0_t1.udp_tx.datagrams - stats_path0_t0.udp_tx.datagrams) == 0);
    assert!((stats_path1_t1.udp_tx.datagrams - stats_path1_t0.udp_tx.datagrams) > 0);

    Ok(())
}

#[test]
fn server_abandon_last_verified_path() -> TestResult {
    // The client abandons the last verified path the server has. The server is expected to
    // send PATH_ABANDON on the abandoned path itself in this case.

    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Passively migrate the client and immediately open a second path. This way the client
    // will assume the 2nd path is validated but to the server it will be
    // un-validated. Otherwise the client would not allow closing path 0 since there would
    // be no validated path left over.
    pair.routes.as_basic_mut().passive_migration(Client);
    let route = FourTuple {
        remote: pair.routes.public_server_addr(),
        local_ip: None,
    };
    pair.open_path(Client, route, PathStatus::Available)?;
    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive();

    // We need to move past the Abandoned and Open events, we really only care about getting
    // the stats from the abandoned path.
    let evt = pair.poll(Server);
    assert!(matches!(
        evt,
        Some(Event::Path(PathEvent::Abandoned { .. }))
    ));
    let evt = pair.poll(Server);
    assert!(matches!(
        evt,
        Some(Event::Path(PathEvent::Established { .. }))
    ));

    let evt = pair.poll(Server);
    let Some(Event::Path(PathEvent::Discarded { path_stats, .. })) = evt else {
        panic!("did not get path discarded event");
    };

    assert_eq!(path_stats.frame_tx.path_abandon, 1);

    Ok(())
}

/// Remote abandons a non-last path: error code is propagated in the event.
#[test]
fn remote_path_abandon_with_remaining_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let _path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    pair.close_path(Server, PathId::ZERO, 42u8.into())?;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned {
            id: PathId::ZERO,
            reason: PathAbandonReason::RemoteAbandoned { error_code }
        })) if error_code == 42u8.into()
    );
    assert!(!pair.is_closed(Client));
    assert!(!pair.is_closed(Server));

    Ok(())
}

/// Remote abandons the last path, no new path opened: connection closes after grace period.
#[test]
fn remote_path_abandon_last_path_closes_connection() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Open a second path so we can close path 0 normally
    let server_addr = pair.routes.public_server_addr();
    let _path1 = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    // Close path 0 normally (path 1 remains)
    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive();
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    // Simulate remote abandoning path 1 (now the client's last path)
    // We use force_remote_abandon because in a real scenario the PATH_ABANDON
    // arrives via a packet on the same path, which auto-creates the path on
    // the receiver if it doesn't exist, making packet-dropping approaches
    // unable to create a true last-path scenario in tests.
    pair.force_remote_abandon(Client, PathId::from(1u8));
    pair.drive();

    // After the grace period (no new path opened), the client should be closed.
    assert!(
        pair.is_closed(Client),
        "client should be closed after grace period expired"
    );

    // Verify the client saw the abandon and connection close events.
    let mut saw_abandon = false;
    let mut saw_close = false;
    while let Some(event) = pair.poll(Client) {
        match event {
            Event::Path(PathEvent::Abandoned {
                reason: PathAbandonReason::RemoteAbandoned { .. },
                ..
            }) => saw_abandon = true,
            Event::ConnectionLost { .. } => saw_close = true,
            _ => {}
        }
    }
    assert!(
        saw_abandon,
        "client should see path abandon event for last path"
    );
    assert!(saw_close, "client should see connection lost event");

    Ok(())
}

/// Remote abandons the last path, client opens a new path within grace period: connection survives.
#[test]
fn remote_path_abandon_last_path_client_opens_new() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Open path 1, close path 0 normally
    let server_addr = pair.routes.public_server_addr();
    let _path1 = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive();
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    // Simulate remote abandoning path 1 (client's last path)
    pair.force_remote_abandon(Client, PathId::from(1u8));

    // Client opens a new path within the grace period
    let new_path = pair.routes.public_server_addr();
    let new_path_id = pair.open_path(
        Client,
        FourTuple::from_remote(new_path),
        PathStatus::Available,
    )?;
    pair.drive();

    assert!(!pair.is_closed(Client), "client should survive");
    assert!(!pair.is_closed(Server), "server should survive");

    let mut saw_abandon = false;
    let mut saw_opened = false;
    while let Some(event) = pair.poll(Client) {
        match event {
            Event::Path(PathEvent::Abandoned {
                reason: PathAbandonReason::RemoteAbandoned { .. },
                ..
            }) => saw_abandon = true,
            Event::Path(PathEvent::Established { id }) if id == new_path_id => saw_opened = true,
            _ => {}
        }
    }
    assert!(saw_abandon, "client should see abandon for last path");
    assert!(saw_opened, "client should see new path opened");

    Ok(())
}

#[test]
fn abandon_path_data_continues() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Open a second path
    let server_addr = pair.routes.public_server_addr();
    let path1 = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    // Drain open events
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    // Client abandons path 0 (picoquic: `picoquic_abandon_path(cnx_client, 0, 0, "test", time)`)
    info!("client abandons path 0");
    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive();

    // Drain abandon + discard events
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    // Picoquic verification: both sides should have exactly 1 path remaining.
    // In noq, we check that path 0 is abandoned and path 1 is still alive.
    assert!(
        pair.path_status(Client, path1).is_ok(),
        "client should still have path 1"
    );
    assert!(
        pair.path_status(Server, path1).is_ok(),
        "server should still have path 1"
    );

    // Data should still flow on the remaining path (picoquic sends test_scenario_multipath)
    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    const MSG: &[u8] = b"data after path abandon";
    pair.send_stream(Client, s).write(MSG).unwrap();
    pair.send_stream(Client, s).finish().unwrap();
    pair.drive();

    assert_matches!(
        pair.poll(Server),
        Some(Event::Stream(StreamEvent::Opened { dir: Dir::Uni }))
    );
    assert_matches!(pair.streams(Server).accept(Dir::Uni), Some(stream) if stream == s);
    let mut recv = pair.recv_stream(Server, s);
    let mut chunks = recv.read(false).unwrap();
    assert_matches!(
        chunks.next(usize::MAX),
        Ok(Some(chunk)) if chunk.bytes == MSG
    );
    let _ = chunks.finalize();

    // Connection alive
    assert!(!pair.is_closed(Client));
    assert!(!pair.is_closed(Server));

    Ok(())
}

/// Regression test: a NewIdentifiers reply arriving after a path is abandoned
/// must not result in the frames being queued for transmission in
/// `pending.new_cids`.
#[test]
fn new_identifiers_after_abandon_does_not_panic() -> TestResult {
    use crate::shared::{ConnectionEvent, ConnectionEventInner, IssuedCid};
    use crate::token::ResetToken;

    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    // A second path is needed so close_path(0) is not the last open path.
    let server_addr = pair.routes.public_server_addr();
    let _path1 = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    let cid_seq_before = pair.conn(Client).active_local_path_cid_seq(0);

    pair.close_path(Client, PathId::ZERO, 0u8.into())?;
    pair.drive_client();
    pair.drive_server();
    pair.drive_client();

    // Inject a NewIdentifiers reply for the just-abandoned path.
    let synthetic_seq = cid_seq_before.1 + 1;
    let issued = vec![IssuedCid {
        path_id: PathId::ZERO,
        sequence: synthetic_seq,
        id: ConnectionId::new(&[0xAAu8; 8]),
        reset_token: ResetToken::from([0u8; crate::RESET_TOKEN_SIZE]),
    }];
    let late_event = ConnectionEvent(ConnectionEventInner::NewIdentifiers(
        issued, pair.time, 8, None,
    ));
    pair.handle_event(Client, late_event);

    // The CID must not have been added to local_cid_state, otherwise it would be
    // queued in `pending.new_cids` and later sent as a NEW_CONNECTION_ID frame
    // for an abandoned path.
    let cid_seq_after = pair.conn(Client).active_local_path_cid_seq(0);
    assert_eq!(cid_seq_before, cid_seq_after);

    Ok(())
}

/// Ported from picoquic `multipath_test_ab1`. Abandon + reopen cycle, 3 rounds.
#[test]
fn abandon_cycle() -> TestResult {
    let _guard = subscribe();

    let mut pair = ConnPair::builder().enable_multipath().connect();

    // Set up addresses for multiple paths
    let routing = pair.routes.as_basic();
    let mut addrs_client = vec![routing.client_addr];
    let mut addrs_server = vec![routing.server_addr];
    for i in 1..6u16 {
        let mut ca = routing.client_addr;
        ca.set_port(ca.port() + i);
        addrs_client.push(ca);
        let mut sa = routing.server_addr;
        sa.set_port(sa.port() + i);
        addrs_server.push(sa);
    }
    pair.routes =
        ManyToManyRouting::simple_symmetric(addrs_client.clone(), addrs_server.clone()).into();

    // Cycle: open a second path, abandon path 0, verify cleanup, repeat with new paths.
    // Each cycle uses a fresh pair of addresses.
    let mut current_path = PathId::ZERO;
    for cycle in 0..3u16 {
        let addr_idx = (cycle as usize) + 1;
        let new_path_net = FourTuple {
            local_ip: Some(addrs_client[addr_idx].ip()),
            remote: addrs_server[addr_idx],
        };

        info!("cycle {cycle}: opening new path on addr index {addr_idx}");
        let new_path = pair.open_path(Client, new_path_net, PathStatus::Available)?;
        pair.drive();

        // Drain events
        while pair.poll(Client).is_some() {}
        while pair.poll(Server).is_some() {}

        info!("cycle {cycle}: abandoning path {current_path}");
        pair.close_path(Client, current_path, 0u8.into())?;
        pair.drive();

        // Drain events (abandon + discard)
        while pair.poll(Client).is_some() {}
        while pair.poll(Server).is_some() {}

        // Verify the abandoned path is gone and the new path remains
        assert!(
            pair.path_status(Client, current_path).is_err(),
            "cycle {cycle}: abandoned path should be gone"
        );
        assert!(
            pair.path_status(Client, new_path).is_ok(),
            "cycle {cycle}: new path should be alive"
        );

        // Verify connection is alive
        assert!(
            !pair.is_closed(Client),
            "cycle {cycle}: client should be alive"
        );
        assert!(
            !pair.is_closed(Server),
            "cycle {cycle}: server should be alive"
        );

        // Picoquic verifies CID stash has >= 2 entries; we verify data still works.
        let s = pair.streams(Client).open(Dir::Uni).unwrap();
        let msg = format!("cycle {cycle}");
        pair.send_stream(Client, s).write(msg.as_bytes()).unwrap();
        pair.send_stream(Client, s).finish().unwrap();
        pair.drive();

        // Server should receive the data
        assert_matches!(
            pair.poll(Server),
            Some(Event::Stream(StreamEvent::Opened { dir: Dir::Uni }))
        );
        assert_matches!(pair.streams(Server).accept(Dir::Uni), Some(stream) if stream == s);
        let mut recv = pair.recv_stream(Server, s);
        let mut chunks = recv.read(false).unwrap();
        assert_matches!(
            chunks.next(usize::MAX),
            Ok(Some(chunk)) if chunk.bytes == msg.as_bytes()
        );
        let _ = chunks.finalize();

        current_path = new_path;
    }

    Ok(())
}

/// NAT traversal round revalidates an existing path via new PATH_CHALLENGE.
#[test]
fn nat_traversal_revalidates_existing_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .enable_nat_traversal()
        .connect();

    let server_addr = pair.routes.as_basic().server_addr;
    let client_addr = pair.routes.as_basic().client_addr;

    pair.add_nat_traversal_address(Server, server_addr)?;
    pair.add_nat_traversal_address(Client, client_addr)?;
    pair.drive();

    let probed = pair.initiate_nat_traversal_round(Client)?;
    assert_eq!(probed.len(), 1);
    assert_eq!(probed[0], server_addr);
    pair.drive();

    assert_eq!(
        pair.path_status(Client, PathId::ZERO)?,
        PathStatus::Available
    );

    let challenges_before = pair.stats(Client).frame_tx.path_challenge;

    // Second round with the same addresses should trigger revalidation
    let probed = pair.initiate_nat_traversal_round(Client)?;
    assert_eq!(probed.len(), 1);
    pair.drive_bounded(20);

    let challenges_after = pair.stats(Client).frame_tx.path_challenge;
    assert!(
        challenges_after > challenges_before,
        "expected new PATH_CHALLENGE for existing path \
         (before={challenges_before}, after={challenges_after})"
    );

    Ok(())
}

/// After a silent gap, PTO backs off exponentially and can reach minutes.
/// The 2s PTO cap ensures recovery happens promptly once connectivity returns.
#[test]
fn path_recovers_after_silent_gap_via_keepalive() -> TestResult {
    let _guard = subscribe();

    let mut builder = ConnPair::builder().enable_multipath();
    builder
        .server_transport_cfg
        .default_path_max_idle_timeout(Some(Duration::from_secs(60)));
    builder
        .client_transport_cfg
        .default_path_max_idle_timeout(Some(Duration::from_secs(60)));
    let mut pair = builder.connect();

    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    let s = pair.streams(Server).open(Dir::Uni).unwrap();
    pair.send_stream(Server, s).write(&[42u8; 5000]).unwrap();
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Stream(StreamEvent::Opened { dir: Dir::Uni }))
    );
    assert_matches!(pair.streams(Client).accept(Dir::Uni), Some(stream) if stream == s);
    let mut recv = pair.recv_stream(Client, s);
    let mut chunks = recv.read(false).unwrap();
    let mut total_read = 0;
    while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
        total_read += chunk.bytes.len();
    }
    let _ = chunks.finalize();
    info!("read {total_read} bytes before gap");
    assert!(total_read > 0, "should have received initial data");

    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    pair.send_stream(Server, s).write(&[43u8; 5000]).unwrap();

    info!("starting silent gap");
    let gap_start = pair.time;
    for _ in 0..10 {
        if !pair.blackhole_step(true, true) {
            break;
        }
    }
    let gap_duration = pair.time - gap_start;
    info!("gap lasted {:?}", gap_duration);

    pair.send_stream(Server, s).write(b"after gap").unwrap();
    pair.send_stream(Server, s).finish().unwrap();

    info!("gap ended, driving to recovery");
    let mut received_post_gap = false;
    for i in 0..50 {
        if pair.is_closed(Client) || pair.is_closed(Server) {
            info!("connection died at step {i}");
            break;
        }
        pair.step();

        while let Some(event) = pair.poll(Client) {
            if matches!(&event, Event::Stream(StreamEvent::Readable { .. })) {
                info!("client received data at step {i}");
                received_post_gap = true;
            }
        }
        if received_post_gap {
            break;
        }
    }

    assert!(!pair.is_closed(Client), "client should survive the gap");
    assert!(!pair.is_closed(Server), "server should survive the gap");
    assert!(
        received_post_gap,
        "client should receive data after the gap recovers"
    );

    Ok(())
}

/// Tests NAT traversal manages to open a 2nd path.
#[test]
fn test_simple_nat_traveral_opens_path() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .enable_nat_traversal()
        .with_routes(SimpleFirewallRouting::new())
        .connect();

    info!("adding addrs");
    pair.add_nat_traversal_address(Server, SimpleFirewallRouting::SERVER_FW_ADDR)?;
    pair.add_nat_traversal_address(Client, SimpleFirewallRouting::CLIENT_FW_ADDR)?;
    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(
        event,
        Event::NatTraversal(n0_nat_traversal::Event::AddressAdded(_))
    );

    info!("init NAT traversal");
    pair.initiate_nat_traversal_round(Client)?;

    // Ensure we have no more events queued
    assert_matches!(pair.poll(Client), None);
    assert_matches!(pair.poll(Server), None);

    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    let event = next_event_past_status(&mut pair, Server);
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    Ok(())
}

/// Test that a PATH_CHALLENGE is added to a PATH_RESPONSE for NAT traversal.
#[test]
fn test_simple_nat_traversal_challenge_with_response() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .enable_nat_traversal()
        .connect();

    info!("setting routes, adding addrs");
    pair.routes = SimpleFirewallRouting::new().into();
    pair.add_nat_traversal_address(Server, SimpleFirewallRouting::SERVER_FW_ADDR)?;
    pair.add_nat_traversal_address(Client, SimpleFirewallRouting::CLIENT_FW_ADDR)?;
    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(
        event,
        Event::NatTraversal(n0_nat_traversal::Event::AddressAdded(_))
    );

    info!("init NAT traversal");
    pair.initiate_nat_traversal_round(Client)?;

    // Ensure we have no more events queued
    assert_matches!(pair.poll(Client), None);
    assert_matches!(pair.poll(Server), None);

    // Client sends probe (blocked) + REACH_OUT, server send probe. Both firewalls open.
    pair.step();

    // Client receives probe, includes its own challenge with the response.
    let stats0 = pair.stats(Client);
    pair.step();
    let stats1 = pair.stats(Client);

    // Without the challenge-with-response only a PATH_RESPONSE would have been sent.
    assert_eq!(
        stats1.frame_tx.path_response - stats0.frame_tx.path_response,
        1
    );
    assert_eq!(
        stats1.frame_tx.path_challenge - stats0.frame_tx.path_challenge,
        1
    );

    // Continue till the end.
    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    let event = next_event_past_status(&mut pair, Server);
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    Ok(())
}

/// Tests a "very easy NAT" for the server with a "hard NAT" for the client.
///
/// Here "very easy NAT" is an EIM+EIF NAT. The port is opened by the QAD probe. "hard NAT"
/// is an EDM NAT.
#[test]
fn test_hard_nat_client_opens_path() -> TestResult {
    let _guard = subscribe();
    let mut routing = SimpleFirewallRouting::new();
    // By configuring the server side to be open it emulates an EIM+EIF NAT: the QAD probe
    // already opened the firewall.
    routing.server_firewall_open = true;
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .enable_nat_traversal()
        .with_routes(routing)
        .connect();

    info!("adding addrs");
    pair.add_nat_traversal_address(Server, SimpleFirewallRouting::SERVER_FW_ADDR)?;
    // By adding a dummy address the client can start NAT traversal but does not advertise
    // its real public interface, thus emulating a hard NAT. Choose the last addr in the
    // client subnet.
    let dummy_addr: SocketAddr = "[::1:ffff]:1".parse()?;
    pair.add_nat_traversal_address(Client, dummy_addr)?;
    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(
        event,
        Event::NatTraversal(n0_nat_traversal::Event::AddressAdded(_))
    );

    info!("init NAT traversal");
    pair.initiate_nat_traversal_round(Client)?;

    // Ensure we have no more events queued
    assert_matches!(pair.poll(Client), None);
    assert_matches!(pair.poll(Server), None);

    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    let event = next_event_past_status(&mut pair, Server);
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    Ok(())
}

/// Tests a "very easy NAT" for the client with a "hard NAT" for the server.
///
/// Here "very easy NAT" is an EIM+EIF NAT. The port is opened by the QAD probe. "hard NAT"
/// is an EDM NAT.
#[test]
fn test_hard_nat_server_opens_path() -> TestResult {
    let _guard = subscribe();
    let mut routing = SimpleFirewallRouting::new();
    // By configuring the client side to be open it emulates an EIM+EIF NAT: the QAD probe
    // already opened the firewall.
    routing.client_firewall_open = true;
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .enable_nat_traversal()
        .with_routes(routing)
        .connect();

    info!("adding addrs");
    // By adding a dummy address the client can start NAT traversal but does not advertise
    // its real public interface, thus emulating a hard NAT. Choose the last addr in the
    // server subnet.
    let dummy_addr: SocketAddr = "[::2:ffff]:1".parse()?;
    pair.add_nat_traversal_address(Server, dummy_addr)?;
    pair.add_nat_traversal_address(Client, SimpleFirewallRouting::CLIENT_FW_ADDR)?;
    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(
        event,
        Event::NatTraversal(n0_nat_traversal::Event::AddressAdded(_))
    );

    info!("init NAT traversal");
    pair.initiate_nat_traversal_round(Client)?;

    // Ensure we have no more events queued
    assert_matches!(pair.poll(Client), None);
    assert_matches!(pair.poll(Server), None);

    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    let event = next_event_past_status(&mut pair, Server);
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    Ok(())
}

/// If the client is not allowed to migrate, it should still be allowed to send NAT
/// traversal probes and be able to hole-punch.
#[test]
fn test_peer_may_probe() -> TestResult {
    let _guard = subscribe();

    let builder = ConnPair::builder()
        .enable_multipath()
        .enable_nat_traversal()
        .disable_mtud_discovery()
        .with_routes(SimpleFirewallRouting::new());
    let server_cfg = ServerConfig {
        transport: Arc::new(builder.server_transport_cfg.clone()),
        migration: false,
        ..server_config()
    };
    let mut pair = builder.with_server_cfg(server_cfg).connect();

    pair.add_nat_traversal_address(Server, SimpleFirewallRouting::SERVER_FW_ADDR)?;
    pair.add_nat_traversal_address(Client, SimpleFirewallRouting::CLIENT_FW_ADDR)?;
    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(
        event,
        Event::NatTraversal(n0_nat_traversal::Event::AddressAdded(_))
    );

    info!("init NAT traversal");
    pair.initiate_nat_traversal_round(Client)?;

    // Ensure we have no more events queued
    assert_matches!(pair.poll(Client), None);
    assert_matches!(pair.poll(Server), None);

    pair.drive();

    let event = pair.poll(Client).expect("should have event");
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    let event = next_event_past_status(&mut pair, Server);
    assert_matches!(event, Event::Path(PathEvent::Established { .. }));

    Ok(())
}

#[test]
fn path_open_challenge_lost() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder()
        .enable_multipath()
        .disable_mtud_discovery()
        .connect();

    info!("opening path");
    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    let first_challenge = pair.time;
    pair.drive_client();

    // Drop the 1st PATH_CHALLENGE
    let client_stats = pair.path_stats(Client, path_id).unwrap();
    assert_eq!(client_stats.frame_tx.path_challenge, 1);
    assert!(pair.path_stats(Server, path_id).is_none());
    info!("dropping client's packet");
    pair.server.inbound.clear();

    // Drop the 2nd PATH_CHALLENGE
    pair.time = pair
        .client
        .next_wakeup()
        .expect("couldn't drive client forward");
    info!("advancing to {:?} for client", pair.time - pair.epoch);
    let second_challenge = pair.time;
    pair.drive_client();
    let client_stats = pair.path_stats(Client, path_id).unwrap();
    assert_eq!(client_stats.frame_tx.path_challenge, 2);
    assert!(pair.path_stats(Server, path_id).is_none());
    info!("dropping client's packet");
    pair.server.inbound.clear();

    // Send the 3rd PATH_CHALLENGE
    pair.time = pair
        .client
        .next_wakeup()
        .expect("couldn't drive client forward");
    info!("advancing to {:?} for client", pair.time - pair.epoch);
    let third_challenge = pair.time;
    pair.drive_client();
    let client_stats = pair.path_stats(Client, path_id).unwrap();
    assert_eq!(client_stats.frame_tx.path_challenge, 3);
    assert!(pair.path_stats(Server, path_id).is_none());

    let first_delay = second_challenge - first_challenge;
    let second_delay = third_challenge - second_challenge;
    assert!(
        first_delay < second_delay,
        "delays must monotonically increase"
    );

    // Open path, drive to completion
    pair.drive_server();
    let server_stats = pair.path_stats(Server, path_id).unwrap();
    assert_eq!(server_stats.frame_rx.path_challenge, 1);
    pair.advance_time();
    pair.drive();
    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Established { id  })) if id == path_id
    );
    Ok(())
}

#[test]
fn paths_blocked_retransmission() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    for _ in 1..MAX_PATHS {
        pair.open_path(
            Client,
            FourTuple::from_remote(server_addr),
            PathStatus::Available,
        )?;
    }
    pair.drive_client(); // Open all the paths we are allowed to open
    pair.drive_server(); // Let the server process all these newly opened paths
    pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )
    .expect_err("expected PathError::MaxPathIdReached");
    pair.drive_client(); // Let the client produce the PATHS_BLOCKED frame
    assert_eq!(pair.stats(Client).frame_tx.paths_blocked, 1);
    pair.server.inbound.clear(); // We drop the PATHS_BLOCKED frame
    pair.drive();
    assert_eq!(pair.stats(Client).frame_tx.paths_blocked, 2);
    Ok(())
}

/// This test used to generate a PROTOCOL_VIOLATION error from just packet loss and delayed packets.
///
/// The problem was receiving a PATH_CIDS_BLOCKED frame with path_id=1 and next_seq=1 when the
/// server side had already abandoned and discarded path 1.
/// In that case, we assumed the other side would violate the protocol, whereas in reality it's just
/// a (very) delayed packet.
///
/// The fix was to properly check if the path was already abandoned that the PATH_CIDS_BLOCKED frame
/// referred to.
#[test]
fn regression_delayed_path_cids_blocked() -> TestResult {
    let _guard = subscribe();

    let (mut pair, client_cfg) = ConnPair::builder().enable_multipath().build_pair();
    info!("connecting");
    let client_ch = pair.begin_connect(client_cfg);
    pair.drive_client(); // Client sends Initial
    pair.drive_server(); // Server receives Initial, sends Handshake
    pair.drive_client(); // Client receives Handshake, sends handshake confirmed
    pair.drive_server(); // Server receives handshake confirmed, sends
    // PATH_NEW_CONNECTION_ID and confirms handshake itself Capture the server's
    // PATH_NEW_CONNECTION_ID frames so the client generates a PATH_CIDS_BLOCKED frame on
    // the next open_path call. This only works, because the server's outbound packet is
    // constructed inefficiently: The PATH_NEW_CONNECTION_ID frames should *actually* be
    // coaleced together with the server's handshake response instead of being put into a
    // separate datagram. See also <https://github.com/n0-computer/noq/issues/66>
    let (_, captured_server_cids) = pair.client.inbound.pop_last().unwrap();
    pair.drive_client(); // Client receives confirmed handshake, but not PATH_NEW_CONNECTION_ID frames
    let server_ch = pair.server.assert_accept();
    pair.finish_connect(client_ch, server_ch);

    // Attempting to open a path on the client side will fail, because we're missing the CIDs for
    // path 1 and more
    let mut pair = ConnPair::new(pair, client_ch, server_ch);
    let server_addr = pair.routes.public_server_addr();
    pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )
    .expect_err("expected RemoteCidsExhausted error");

    pair.drive_client(); // Client generates PATH_CIDS_BLOCKED
    // We intentionally drop the client's PATH_CIDS_BLOCKED frame.
    pair.server.inbound.pop_last().unwrap();
    // After the client has sent the PATH_CIDS_BLOCKED frame, we give it all the server's CIDs.
    let now = pair.time;
    pair.client.inbound.push(now, captured_server_cids);
    pair.drive_client(); // Client processes the delayed server's PATH_NEW_CONNECTION_ID

    info!("Skipping forward 80ms");
    pair.time += Duration::from_millis(80); // Trigger the client's loss detection timer for the PATH_CIDS_BLOCKED frame
    pair.drive_client(); // Client generates another PATH_CIDS_BLOCKED
    // This is now an encrypted datagram containing a PATH_CIDS_BLOCKED path_id=1 next_seq=1 frame.
    let (_, captured_client_cids_blocked) = pair.server.inbound.pop_last().unwrap();

    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive(); // Fully open the path on both ends
    pair.close_path(Client, path_id, 42u32.into())?;
    pair.drive(); // Fully process closing the path on both ends, including discarding path state

    // Now we send the delayed PATH_CIDS_BLOCKED frame, and it'll trigger a protocol violation
    let now = pair.time;
    pair.server.inbound.push(now, captured_client_cids_blocked);
    pair.drive();

    // The server must not close the connection over the stale frame.
    while let Some(event) = pair.poll(Server) {
        if let Event::ConnectionLost {
            reason: crate::ConnectionError::TransportError(error),
        } = event
        {
            assert_ne!(
                error.code,
                TransportErrorCode::PROTOCOL_VIOLATION,
                "stale PATH_CIDS_BLOCKED should not trigger PROTOCOL_VIOLATION: {}",
                error.reason
            );
        }
    }
    Ok(())
}

#[test]
fn regression_discarded_path_stats_are_up_to_date() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();

    let server_addr = pair.routes.public_server_addr();
    let path_id = pair.open_path(
        Client,
        FourTuple::from_remote(server_addr),
        PathStatus::Available,
    )?;
    pair.drive();

    // Drain establishment events.
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    // Close the path and drive until both sides discard it.
    pair.close_path(Client, path_id, 0u8.into())?;
    pair.drive();

    assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Abandoned { id, .. })) if id == path_id
    );
    assert_matches!(
        pair.poll(Server),
        Some(Event::Path(PathEvent::Abandoned { id, .. })) if id == path_id
    );

    pair.drive();

    let discarded_stats = assert_matches!(
        pair.poll(Client),
        Some(Event::Path(PathEvent::Discarded { id, path_stats })) if id == path_id
        => *path_stats
    );

    // After a full handshake + MTU probing on the second path, these must be non-zero.
    assert_ne!(discarded_stats.cwnd, 0);
    assert_ne!(discarded_stats.current_mtu, 0);

    Ok(())
}

/// A controller whose `send_rank` a test chooses from the path's build order (0 = the first
/// path the factory built) and the bytes it has sent (mpquic patch: the scheduler hook).
#[derive(Debug, Clone)]
struct RankedController {
    build_index: usize,
    sent: u64,
    rank: fn(usize, u64) -> Option<u64>,
}

impl crate::congestion::Controller for RankedController {
    fn on_sent(&mut self, _now: crate::Instant, bytes: u64, _last_packet_number: u64) {
        self.sent += bytes;
    }
    fn on_congestion_event(
        &mut self,
        _: crate::Instant,
        _: crate::Instant,
        _: bool,
        _: bool,
        _: u64,
        _: u64,
    ) {
    }
    fn on_mtu_update(&mut self, _new_mtu: u16) {}
    fn window(&self) -> u64 {
        10_000_000
    }
    fn send_rank(&self, _context: &crate::congestion::SendContext) -> Option<u64> {
        (self.rank)(self.build_index, self.sent)
    }
    fn clone_box(&self) -> Box<dyn crate::congestion::Controller> {
        Box::new(self.clone())
    }
    fn initial_window(&self) -> u64 {
        10_000_000
    }
    fn into_any(self: Box<Self>) -> Box<dyn core::any::Any> {
        self
    }
}

struct RankedFactory {
    built: std::sync::atomic::AtomicUsize,
    rank: fn(usize, u64) -> Option<u64>,
}

impl crate::congestion::ControllerFactory for RankedFactory {
    fn build(
        self: Arc<Self>,
        _now: crate::Instant,
        _current_mtu: u16,
    ) -> Box<dyn crate::congestion::Controller> {
        let build_index = self.built.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::new(RankedController { build_index, sent: 0, rank: self.rank })
    }
}

/// A connected pair whose client ranks its paths by `rank`, with its second path open.
fn ranked_pair(rank: fn(usize, u64) -> Option<u64>) -> (ConnPair, PathId) {
    let (pair, mut client_cfg) = ConnPair::builder().enable_multipath().build_pair();
    let mut transport = TransportConfig {
        initial_rtt: Duration::from_millis(10),
        ..TransportConfig::default()
    };
    transport.max_concurrent_multipath_paths(MAX_PATHS);
    transport.initial_key_phase_size(Some(u64::MAX));
    transport.congestion_controller_factory(Arc::new(RankedFactory {
        built: Default::default(),
        rank,
    }));
    client_cfg.transport = Arc::new(transport);
    let mut pair = ConnPair::connect_with(pair, client_cfg);
    let server_addr = pair.routes.public_server_addr();
    let path_1 = pair
        .open_path(Client, FourTuple::from_remote(server_addr), PathStatus::Available)
        .unwrap();
    pair.drive();
    (pair, path_1)
}

/// A connected two-path pair whose client ranks its paths by `rank`; returns the client's bytes
/// sent on paths 0 and 1 while it writes 200 kB on a stream.
fn client_bytes_per_path(rank: fn(usize, u64) -> Option<u64>) -> (u64, u64) {
    let (mut pair, path_1) = ranked_pair(rank);
    let sent = |pair: &mut ConnPair, path| pair.conn_mut(Client).path_stats(path).unwrap().udp_tx.bytes;
    let before = (sent(&mut pair, PathId::ZERO), sent(&mut pair, path_1));
    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    pair.send_stream(Client, s).write(&[7; 200_000]).unwrap();
    pair.drive();
    let after = (sent(&mut pair, PathId::ZERO), sent(&mut pair, path_1));
    (after.0 - before.0, after.1 - before.1)
}

/// mpquic patch: `Controller::send_rank` decides which path fills the next packets.
#[test]
fn send_rank_orders_the_paths() {
    let _guard = subscribe();
    // The stack's order (every path ranks 0): the lowest id with room takes everything.
    let (on_0, on_1) = client_bytes_per_path(|_, _| Some(0));
    assert!(on_0 > 200_000 && on_1 < 10_000, "stack order: {on_0} / {on_1}");
    // Fewest bytes sent first: the data is spread evenly, a batch at a time.
    let (on_0, on_1) = client_bytes_per_path(|_, sent| Some(sent));
    assert!(
        on_0.abs_diff(on_1) < 30_000,
        "round robin: {on_0} / {on_1} bytes on paths 0 / 1"
    );
    // A path ranked `None` takes no data while another path ranks.
    let (on_0, on_1) = client_bytes_per_path(|index, _| (index == 1).then_some(0));
    assert!(on_1 > 200_000 && on_0 < 10_000, "path 0 excluded: {on_0} / {on_1}");
}

/// mpquic patch 2 with 3: a path the controller keeps from data (`send_rank` is `None`) still
/// acknowledges what arrives on it, on it. Before, its PATH_ACKs were given to it (it may send,
/// as far as the path's state goes) but never written (its rank masked `may_send_data`), so the
/// peer's packets on it went unanswered and a peer watching for silent paths found it failed.
#[test]
fn a_path_kept_from_data_still_acknowledges_on_itself() -> TestResult {
    let _guard = subscribe();
    let (mut pair, path_1) = ranked_pair(|index, _| (index == 0).then_some(0));
    let acks = |pair: &mut ConnPair| {
        let sent = pair.conn_mut(Client).path_stats(path_1).unwrap().frame_tx.path_acks;
        let received = pair.conn_mut(Server).path_stats(path_1).unwrap().frame_rx.path_acks;
        (sent, received)
    };
    let before = acks(&mut pair);
    for _ in 0..3 {
        pair.conn_mut(Server).ping_path(path_1)?;
        pair.drive();
    }
    let (sent, received) = acks(&mut pair);
    let (sent, received) = (sent - before.0, received - before.1);
    info!(sent, received, "PATH_ACKs on the client's unranked path 1");
    assert!(sent > 0, "the client did not acknowledge the pings on its unranked path");
    assert!(received > 0, "the server heard no PATH_ACK on path 1");
    assert!(!pair.is_closed(Client) && !pair.is_closed(Server));
    Ok(())
}

/// mpquic patch 6 (the ACK placement of patch 3 decided once per packet): where it now does its
/// own work, a path with pending ACKs that cannot carry data. The server makes the client's
/// path 1 a backup on its side while the client spreads its data over both paths: the PATH_ACKs
/// of path 1 then ride path 0, the fastest path that can carry data, none ride path 1, and
/// everything the client sent on path 1 is acknowledged.
#[test]
fn a_backup_paths_acks_ride_the_fastest_data_path() -> TestResult {
    let _guard = subscribe();
    let (mut pair, path_1) = ranked_pair(|_, sent| Some(sent));
    pair.conn_mut(Server).set_path_status(path_1, PathStatus::Backup)?;
    pair.drive();
    let acks_sent = |pair: &mut ConnPair, path| {
        let stats = pair.conn_mut(Server).path_stats(path).unwrap();
        stats.frame_tx.path_acks
    };
    let before = (acks_sent(&mut pair, PathId::ZERO), acks_sent(&mut pair, path_1));
    let sent_on_1_before = pair.path_stats(Client, path_1).unwrap().udp_tx.bytes;
    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    pair.send_stream(Client, s).write(&[7; 200_000])?;
    pair.drive();
    let sent_on_1 = pair.path_stats(Client, path_1).unwrap().udp_tx.bytes - sent_on_1_before;
    let on_0 = acks_sent(&mut pair, PathId::ZERO) - before.0;
    let on_1 = acks_sent(&mut pair, path_1) - before.1;
    info!(sent_on_1, on_0, on_1, "PATH_ACKs sent by the server per path");
    assert!(sent_on_1 > 50_000, "the client spread its data: {sent_on_1} bytes on path 1");
    assert_eq!(on_1, 0, "PATH_ACKs on the server's backup path");
    assert!(on_0 > 0, "no PATH_ACK on path 0");
    let client_path_1 = pair.path_stats(Client, path_1).unwrap();
    assert_eq!(client_path_1.lost_packets, 0, "packets on path 1 went unacknowledged");
    assert!(!pair.is_closed(Client) && !pair.is_closed(Server));
    Ok(())
}

/// PATH_ACKs ride the path they acknowledge (noq #799): when path 0 goes silent, the
/// receiver's ACKs for path 1 keep flowing on path 1 instead of vanishing into path 0.
#[test]
fn path_acks_stay_on_their_path_when_path_zero_is_black_holed() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();
    let first_client_addr = pair.routes.as_basic().client_addr;
    let first_server_addr = pair.routes.as_basic().server_addr;
    let mut second_client_addr = first_client_addr;
    let mut second_server_addr = first_server_addr;
    second_client_addr.set_port(second_client_addr.port() + 1);
    second_server_addr.set_port(second_server_addr.port() + 1);
    pair.routes = ManyToManyRouting::simple_symmetric(
        [first_client_addr, second_client_addr],
        [first_server_addr, second_server_addr],
    )
    .into();
    let second_path = FourTuple {
        local_ip: Some(second_client_addr.ip()),
        remote: second_server_addr,
    };
    let path1 = pair.open_path(Client, second_path, PathStatus::Available)?;
    pair.drive();
    while pair.poll(Client).is_some() {}
    while pair.poll(Server).is_some() {}

    info!("black-holing path 0 in both directions");
    pair.routes =
        ManyToManyRouting::simple_symmetric([second_client_addr], [second_server_addr]).into();
    let acks_sent_before = pair.path_stats(Server, path1).unwrap().frame_tx.path_acks;
    let acks_received_before = pair.path_stats(Client, path1).unwrap().frame_rx.path_acks;

    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    pair.send_stream(Client, s).write(&[7u8; 100_000])?;
    for _ in 0..200 {
        pair.step();
    }

    let acks_sent = pair.path_stats(Server, path1).unwrap().frame_tx.path_acks - acks_sent_before;
    let acks_received =
        pair.path_stats(Client, path1).unwrap().frame_rx.path_acks - acks_received_before;
    info!(acks_sent, acks_received, "PATH_ACKs on path 1 while path 0 is dark");
    assert!(acks_sent > 0, "the server sent no PATH_ACK on path 1");
    assert!(acks_received > 0, "the client received no PATH_ACK on path 1");
    assert!(!pair.is_closed(Client) && !pair.is_closed(Server));
    Ok(())
}

/// mpquic patch 4 (`TransportConfig::lose_in_flight_on_abandon`): abandoning a black-holed path
/// declares the packets in flight on it lost at once, so their data goes to the live path;
/// without the option none is lost at the abandon (loss detection finds them later).
#[test]
fn abandoning_a_dark_path_loses_its_in_flight_packets_at_once() -> TestResult {
    let _guard = subscribe();
    for lose_at_abandon in [false, true] {
        let mut cfg = TransportConfig::default();
        cfg.max_concurrent_multipath_paths(MAX_PATHS)
            .lose_in_flight_on_abandon(lose_at_abandon);
        let mut pair = ConnPair::builder().with_transport_cfg(cfg).connect();
        let first_client_addr = pair.routes.as_basic().client_addr;
        let first_server_addr = pair.routes.as_basic().server_addr;
        let mut second_client_addr = first_client_addr;
        let mut second_server_addr = first_server_addr;
        second_client_addr.set_port(second_client_addr.port() + 1);
        second_server_addr.set_port(second_server_addr.port() + 1);
        pair.routes = ManyToManyRouting::simple_symmetric(
            [first_client_addr, second_client_addr],
            [first_server_addr, second_server_addr],
        )
        .into();
        let second_path = FourTuple {
            local_ip: Some(second_client_addr.ip()),
            remote: second_server_addr,
        };
        pair.open_path(Client, second_path, PathStatus::Available)?;
        pair.drive();
        while pair.poll(Client).is_some() {}
        while pair.poll(Server).is_some() {}

        info!(lose_at_abandon, "black-holing path 0, then sending");
        pair.routes =
            ManyToManyRouting::simple_symmetric([second_client_addr], [second_server_addr]).into();
        const LEN: usize = 20_000;
        let s = pair.streams(Client).open(Dir::Uni).unwrap();
        pair.send_stream(Client, s).write(&[7u8; LEN])?;
        pair.send_stream(Client, s).finish()?;
        pair.drive_client();
        let sent_on_path0 = pair.path_stats(Client, PathId::ZERO).unwrap().udp_tx.datagrams;
        let lost_before = pair.path_stats(Client, PathId::ZERO).unwrap().lost_packets;
        pair.close_path(Client, PathId::ZERO, 0u8.into())?;
        let lost = pair.path_stats(Client, PathId::ZERO).unwrap().lost_packets - lost_before;
        info!(sent_on_path0, lost, "at the abandon");
        if lose_at_abandon {
            assert!(lost > 0, "nothing in flight on path 0 was declared lost at the abandon");
        } else {
            assert_eq!(lost, 0, "without the option the abandon itself loses nothing");
        }

        pair.drive();
        while let Some(event) = pair.poll(Server) {
            let _ = event;
        }
        assert_matches!(pair.streams(Server).accept(Dir::Uni), Some(stream) if stream == s);
        let mut recv = pair.recv_stream(Server, s);
        let mut chunks = recv.read(true).unwrap();
        let mut received = 0;
        while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
            received += chunk.bytes.len();
        }
        let _ = chunks.finalize();
        assert_eq!(received, LEN, "the stream arrives whole over path 1");
    }
    Ok(())
}

/// mpquic patch 5 (`TransportConfig::reinject_on_pto`): what was in flight on a path that went
/// dark reaches the peer over the other path once the dark path's probe timeout fires, with no
/// abandon; without the option it waits for the dark path's probes, which nothing answers.
#[test]
fn a_dark_paths_data_goes_to_the_other_path_at_its_probe_timeout() -> TestResult {
    let _guard = subscribe();
    for reinject in [false, true] {
        let mut cfg = TransportConfig::default();
        cfg.max_concurrent_multipath_paths(MAX_PATHS).reinject_on_pto(reinject);
        let mut pair = ConnPair::builder().with_transport_cfg(cfg).connect();
        let first_client_addr = pair.routes.as_basic().client_addr;
        let first_server_addr = pair.routes.as_basic().server_addr;
        let mut second_client_addr = first_client_addr;
        let mut second_server_addr = first_server_addr;
        second_client_addr.set_port(second_client_addr.port() + 1);
        second_server_addr.set_port(second_server_addr.port() + 1);
        pair.routes = ManyToManyRouting::simple_symmetric(
            [first_client_addr, second_client_addr],
            [first_server_addr, second_server_addr],
        )
        .into();
        let second_path = FourTuple {
            local_ip: Some(second_client_addr.ip()),
            remote: second_server_addr,
        };
        pair.open_path(Client, second_path, PathStatus::Available)?;
        pair.drive();
        while pair.poll(Client).is_some() {}
        while pair.poll(Server).is_some() {}

        pair.routes =
            ManyToManyRouting::simple_symmetric([second_client_addr], [second_server_addr]).into();
        const LEN: usize = 20_000;
        let s = pair.streams(Client).open(Dir::Uni).unwrap();
        pair.send_stream(Client, s).write(&[7u8; LEN])?;
        pair.send_stream(Client, s).finish()?;
        let deadline = pair.time + Duration::from_secs(3);
        let (mut accepted, mut received) = (false, 0);
        while received < LEN && pair.time < deadline && pair.step() {
            while pair.poll(Server).is_some() {}
            accepted |= pair.streams(Server).accept(Dir::Uni).is_some();
            if accepted {
                received += read_all(&mut pair, s);
            }
        }
        let sent_on_path0 = pair.path_stats(Client, PathId::ZERO).unwrap().udp_tx.datagrams;
        info!(reinject, received, sent_on_path0, "3 s after path 0 went dark");
        assert!(sent_on_path0 > 0, "path 0 carried none of the stream: nothing to test");
        assert!(pair.path_status(Client, PathId::ZERO).is_ok(), "path 0 is still open");
        if reinject {
            assert_eq!(received, LEN, "the stream arrives whole over path 1");
        } else {
            assert!(received < LEN, "without the option the data on path 0 waits");
        }
    }
    Ok(())
}

/// Reads what `stream` has for the server now, in order.
fn read_all(pair: &mut ConnPair, stream: StreamId) -> usize {
    let mut recv = pair.recv_stream(Server, stream);
    let Ok(mut chunks) = recv.read(true) else {
        return 0;
    };
    let mut received = 0;
    while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
        received += chunk.bytes.len();
    }
    let _ = chunks.finalize();
    received
}

/// mpquic patch D5: a path opened as backup announces it with PATH_STATUS_BACKUP once the path
/// is established, so the peer knows not to send data on it (before: the peer never heard of it
/// and took the path for available).
#[test]
fn a_path_opened_as_backup_tells_the_peer() -> TestResult {
    let _guard = subscribe();
    let mut pair = ConnPair::builder().enable_multipath().connect();
    let first_client_addr = pair.routes.as_basic().client_addr;
    let first_server_addr = pair.routes.as_basic().server_addr;
    let mut second_client_addr = first_client_addr;
    second_client_addr.set_port(second_client_addr.port() + 1);
    pair.routes = ManyToManyRouting::simple_symmetric(
        [first_client_addr, second_client_addr],
        [first_server_addr],
    )
    .into();
    let second_path = FourTuple {
        local_ip: Some(second_client_addr.ip()),
        remote: first_server_addr,
    };
    let path1 = pair.open_path(Client, second_path, PathStatus::Backup)?;
    pair.drive();
    assert_eq!(pair.path_status(Client, path1)?, PathStatus::Backup);
    assert_eq!(pair.remote_path_status(Server, path1), Some(PathStatus::Backup));
    assert_eq!(pair.stats(Client).frame_tx.path_status_backup, 1);
    // A path opened as available sends no status frame: available is what the peer assumes.
    assert_eq!(pair.stats(Client).frame_tx.path_status_available, 0);
    Ok(())
}

/// `side`'s next event, past the PATH_STATUS_BACKUP of a path the peer opened as backup (NAT
/// traversal opens its paths so), which the peer announces once the path is established since
/// mpquic patch D5.
fn next_event_past_status(pair: &mut ConnPair, side: crate::Side) -> Event {
    loop {
        let event = pair.poll(side).expect("should have event");
        if !matches!(event, Event::Path(PathEvent::RemoteStatus { .. })) {
            return event;
        }
    }
}

/// The `app_limited` flags a [`SmallWindowController`] path saw in `on_ack`, by build index.
type AckLog = Arc<std::sync::Mutex<Vec<(usize, bool)>>>;

/// A controller with a fixed window, small on the first path the factory builds and ample on
/// the others, that ranks paths in build order and logs the `app_limited` flag of every ACK.
#[derive(Debug, Clone)]
struct SmallWindowController {
    build_index: usize,
    log: AckLog,
}

/// The first path's window: ten full packets, filled by the first GSO batch.
const SMALL_WINDOW: u64 = 12_000;

impl crate::congestion::Controller for SmallWindowController {
    fn on_ack(
        &mut self,
        _now: crate::Instant,
        _sent: crate::Instant,
        _bytes: u64,
        _pn: u64,
        app_limited: bool,
        _rtt: &crate::RttEstimator,
    ) {
        self.log.lock().unwrap().push((self.build_index, app_limited));
    }
    fn on_congestion_event(
        &mut self,
        _: crate::Instant,
        _: crate::Instant,
        _: bool,
        _: bool,
        _: u64,
        _: u64,
    ) {
    }
    fn on_mtu_update(&mut self, _new_mtu: u16) {}
    fn window(&self) -> u64 {
        match self.build_index {
            0 => SMALL_WINDOW,
            _ => 10_000_000,
        }
    }
    fn send_rank(&self, _context: &crate::congestion::SendContext) -> Option<u64> {
        Some(self.build_index as u64)
    }
    fn clone_box(&self) -> Box<dyn crate::congestion::Controller> {
        Box::new(self.clone())
    }
    fn initial_window(&self) -> u64 {
        self.window()
    }
    fn into_any(self: Box<Self>) -> Box<dyn core::any::Any> {
        self
    }
}

struct SmallWindowFactory {
    built: std::sync::atomic::AtomicUsize,
    log: AckLog,
}

impl crate::congestion::ControllerFactory for SmallWindowFactory {
    fn build(
        self: Arc<Self>,
        _now: crate::Instant,
        _current_mtu: u16,
    ) -> Box<dyn crate::congestion::Controller> {
        let build_index = self.built.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::new(SmallWindowController { build_index, log: self.log.clone() })
    }
}

/// mpquic patch D7: a path whose window is full is not app-limited when it has nothing to send
/// because another path took the connection's data (RFC 9002 section 7.8: the window is
/// underused only while bytes in flight are below it). Path 0's small window fills, path 1
/// takes the rest of the stream, and path 0's ACKs arrive after the data ran out. Before, those
/// ACKs came with `app_limited` set (path 0's last poll found nothing to send), so a path with
/// a full window whose ACKs came between the application's writes never grew.
#[test]
fn a_full_path_whose_data_another_path_took_is_not_app_limited() {
    let _guard = subscribe();
    let log = AckLog::default();
    let (pair, mut client_cfg) = ConnPair::builder().enable_multipath().build_pair();
    let mut transport = TransportConfig::default();
    transport.max_concurrent_multipath_paths(MAX_PATHS);
    transport.congestion_controller_factory(Arc::new(SmallWindowFactory {
        built: Default::default(),
        log: log.clone(),
    }));
    client_cfg.transport = Arc::new(transport);
    let mut pair = ConnPair::connect_with(pair, client_cfg);
    let server_addr = pair.routes.public_server_addr();
    pair.open_path(Client, FourTuple::from_remote(server_addr), PathStatus::Available)
        .unwrap();
    pair.drive();
    log.lock().unwrap().clear();

    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    pair.send_stream(Client, s).write(&[7; 100_000]).unwrap();
    pair.drive();

    let acks = log.lock().unwrap().clone();
    let on_path_0: Vec<bool> = acks.iter().filter(|(i, _)| *i == 0).map(|&(_, a)| a).collect();
    info!(?on_path_0, "app_limited of path 0's ACKs");
    assert!(on_path_0.len() >= 5, "path 0 carried too little: {acks:?}");
    assert!(
        on_path_0.iter().any(|app_limited| !app_limited),
        "every ACK of the full path 0 counted as app-limited: {on_path_0:?}"
    );
    assert!(acks.iter().any(|&(i, _)| i == 1), "path 1 took none of the data: {acks:?}");
}

/// The peer's ACK_FREQUENCY request reaches a path opened after it arrived (mpquic patch D8).
///
/// Receiving the frame set the thresholds of the packet number spaces that existed then, and a
/// path opened later started from the defaults: the client below asks for an ACK every 10
/// ack-eliciting packets, and the server kept acknowledging every second packet on path 1.
#[test]
fn a_path_opened_after_an_ack_frequency_request_follows_it() -> TestResult {
    let _guard = subscribe();
    let mut ack_frequency = crate::AckFrequencyConfig::default();
    ack_frequency.ack_eliciting_threshold(10u32.into());
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_multipath_paths(MAX_PATHS)
        .ack_frequency_config(Some(ack_frequency));
    let mut pair = ConnPair::builder().with_transport_cfg(transport).connect();
    assert_eq!(pair.stats(Client).frame_tx.ack_frequency, 1, "the request was sent");
    assert_eq!(pair.conn(Server).ack_eliciting_threshold_on(PathId::ZERO), 10);

    let first_client_addr = pair.routes.as_basic().client_addr;
    let first_server_addr = pair.routes.as_basic().server_addr;
    let mut second_client_addr = first_client_addr;
    second_client_addr.set_port(second_client_addr.port() + 1);
    pair.routes = ManyToManyRouting::simple_symmetric(
        [first_client_addr, second_client_addr],
        [first_server_addr],
    )
    .into();
    let second_path = FourTuple {
        local_ip: Some(second_client_addr.ip()),
        remote: first_server_addr,
    };
    let path1 = pair.open_path(Client, second_path, PathStatus::Available)?;
    pair.drive();

    assert_eq!(pair.stats(Client).frame_tx.ack_frequency, 1, "no second request");
    assert_eq!(pair.conn(Server).ack_eliciting_threshold_on(path1), 10);
    Ok(())
}

/// mpquic D9: a packet the client protected before a key update, arriving after the first
/// packet of the new key phase came in on another path, is decrypted with the old keys. Each
/// path numbers its packets from 0, so its number says nothing about the other path's first
/// new-phase packet; noq 1.4 compared the two, took the old packet (path 0's numbers run ahead
/// of path 1's) for a second key update, failed to decrypt it and dropped it, and the client
/// declared it lost.
#[test]
fn an_old_key_packet_arriving_after_the_update_on_another_path_is_decrypted() -> TestResult {
    let _guard = subscribe();
    let (mut pair, path_1) = ranked_pair(|_, _| Some(0));
    let s = pair.streams(Client).open(Dir::Uni).unwrap();
    // Path 0 (the lowest id, so the one the stack's order fills) numbers well ahead of path 1.
    for _ in 0..20 {
        pair.send_stream(Client, s).write(b"warm-up")?;
        pair.drive();
    }
    let lost_before = pair.path_stats(Client, PathId::ZERO).unwrap().lost_packets;
    let sent_before = pair.path_stats(Client, PathId::ZERO).unwrap().udp_tx.datagrams;
    // A packet protected with the old keys on path 0, held back.
    pair.send_stream(Client, s).write(b"old keys")?;
    let now = pair.time;
    pair.client.drive(now);
    assert!(!pair.client.outbound.is_empty());
    pair.client.delay_outbound();
    assert!(pair.path_stats(Client, PathId::ZERO).unwrap().udp_tx.datagrams > sent_before);
    // The key update, and a packet with the new keys on path 1, delivered first.
    pair.conn_mut(Client).force_key_update();
    pair.conn_mut(Client).ping_path(path_1)?;
    let now = pair.time;
    pair.client.drive(now);
    pair.client.finish_delay();
    pair.drive();
    let lost = pair.path_stats(Client, PathId::ZERO).unwrap().lost_packets - lost_before;
    info!(lost, "packets of path 0 declared lost after the key update");
    assert_eq!(lost, 0, "the old-key packet on path 0 was dropped by the server");
    assert!(!pair.is_closed(Client) && !pair.is_closed(Server));
    Ok(())
}
