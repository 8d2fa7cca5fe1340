//! What the client does on a 2026-07-28 connection where the handshake era had a
//! method of its own: `resources/subscribe` becomes the listen stream's
//! `resourceSubscriptions`, `logging/setLevel` the per-request `logLevel`, `ping` a
//! `server/discover`.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::{Arc, Mutex};

use common::{WITH_HTTP, bounded, tool};
use mcpflow::client::{Client, Era};
use mcpflow::protocol::{
    CallToolResult, LoggingLevel, ReadResourceResult, Resource, ResourceContents,
};
use mcpflow::server::{Server, ServerContext};
use serde_json::json;
use tokio::sync::Notify;

#[tokio::test]
async fn a_per_request_subscription_receives_only_its_resource_updates() {
    let server = Server::builder("files", "1")
        .resource(Resource::new("file:///a", "a"), |uri, _cx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "A",
            )]))
        })
        .resource(Resource::new("file:///b", "b"), |uri, _cx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "B",
            )]))
        })
        .build();
    for kind in WITH_HTTP {
        let updates = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (record, signal) = (updates.clone(), arrived.clone());
        let builder = Client::builder("c", "1")
            .era(Era::PerRequest)
            .on_notification(move |n, _c| {
                let (record, signal) = (record.clone(), signal.clone());
                async move {
                    assert_ne!(n.method, "notifications/subscriptions/acknowledged");
                    if n.method == "notifications/resources/updated" {
                        let uri = n.params.map(|p| p.get().to_owned()).unwrap_or_default();
                        record.lock().unwrap().push(uri);
                        signal.notify_one();
                    }
                }
            });
        let (client, _guard) = common::connect(kind, &server, builder).await;
        assert!(client.is_per_request());
        bounded(
            &format!("{kind:?}: subscribe"),
            client.subscribe("file:///a"),
        )
        .await
        .unwrap();
        server.notify_resource_updated("file:///b").await;
        server.notify_resource_updated("file:///a").await;
        bounded(&format!("{kind:?}: resources/updated"), arrived.notified()).await;
        bounded("handled", client.notifications_handled()).await;
        {
            let updates = updates.lock().unwrap();
            assert_eq!(
                updates.len(),
                1,
                "{kind:?}: only the subscribed URI: {updates:?}"
            );
            assert!(updates[0].contains("file:///a"), "{updates:?}");
        }
        bounded(
            &format!("{kind:?}: unsubscribe"),
            client.unsubscribe("file:///a"),
        )
        .await
        .unwrap();
        bounded(
            &format!("{kind:?}: subscribe b"),
            client.subscribe("file:///b"),
        )
        .await
        .unwrap();
        server.notify_resource_updated("file:///a").await;
        server.notify_resource_updated("file:///b").await;
        bounded(&format!("{kind:?}: the update of b"), arrived.notified()).await;
        bounded("handled", client.notifications_handled()).await;
        let updates = updates.lock().unwrap().clone();
        assert_eq!(updates.len(), 2, "{kind:?}: {updates:?}");
        assert!(updates[1].contains("file:///b"), "{updates:?}");
        bounded(&format!("{kind:?}: ping"), client.ping())
            .await
            .unwrap();
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn set_logging_level_sets_the_per_request_log_level() {
    let server = Server::builder("logger", "1")
        .tool(tool("log"), |_a, cx: ServerContext| async move {
            let _ = cx.log(LoggingLevel::Debug, "debug").await;
            let _ = cx.log(LoggingLevel::Error, "error").await;
            Ok(CallToolResult::text("ok"))
        })
        .build();
    for kind in WITH_HTTP {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let builder = Client::builder("t", "1")
            .era(Era::PerRequest)
            .on_log(move |m, _c| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(m.data);
                }
            });
        let (client, _guard) = common::connect(kind, &server, builder).await;
        let call = async |client: &Client| {
            bounded(
                &format!("{kind:?}: call"),
                client.call_tool("log", json!({})),
            )
            .await
            .unwrap();
            bounded("logs handled", client.notifications_handled()).await;
        };
        call(&client).await;
        assert!(rx.try_recv().is_err(), "{kind:?}: no logLevel, no logs");
        bounded("set level", client.set_logging_level(LoggingLevel::Debug))
            .await
            .unwrap();
        call(&client).await;
        assert_eq!(rx.try_recv().unwrap(), json!("debug"), "{kind:?}");
        assert_eq!(rx.try_recv().unwrap(), json!("error"), "{kind:?}");
        bounded("set level", client.set_logging_level(LoggingLevel::Warning))
            .await
            .unwrap();
        call(&client).await;
        assert_eq!(rx.try_recv().unwrap(), json!("error"), "{kind:?}");
        assert!(rx.try_recv().is_err(), "{kind:?}: only the error");
        bounded("close", client.close()).await;
    }
}
