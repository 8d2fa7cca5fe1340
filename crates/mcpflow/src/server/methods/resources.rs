//! `resources/list`, `resources/templates/list`, `resources/read`, and
//! `resources/subscribe` and `resources/unsubscribe`.

use std::sync::PoisonError;

use mcpflow_protocol::methods::method;
use mcpflow_protocol::resources::{ListResourceTemplatesResult, ListResourcesResult};
use mcpflow_protocol::{EmptyResult, ErrorCode, ErrorObject};

use super::{cursor, page};
use crate::server::ServerContext;
use crate::session::Reply;

pub(crate) async fn list(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let (resources, next_cursor) = page(
        &server.registry().resources,
        cursor(&cx)?,
        server.inner.page_size,
        |e| e.resource.clone(),
    )?;
    cx.reply(ListResourcesResult {
        resources,
        next_cursor,
        ..Default::default()
    })
}

pub(crate) async fn templates_list(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let (resource_templates, next_cursor) = page(
        &server.registry().templates,
        cursor(&cx)?,
        server.inner.page_size,
        |e| e.template.clone(),
    )?;
    cx.reply(ListResourceTemplatesResult {
        resource_templates,
        next_cursor,
        ..Default::default()
    })
}

/// Read the resource with this URI, or the first template it matches.
pub(crate) async fn read(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let uri = cx.request().head().uri.required("uri")?.clone();
    let found = cx.server().registry().find_resource(&uri);
    let (handler, vars) = found.ok_or_else(|| {
        ErrorObject::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("resource not found: {uri}"),
        )
        .with_data(serde_json::json!({ "uri": uri }))
    })?;
    let contents = handler(uri, vars, cx.clone()).await?;
    cx.reply(contents)
}

pub(crate) async fn subscribe(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let uri = subscription(&cx, method::RESOURCES_SUBSCRIBE)?;
    subscriptions(&cx).insert(uri);
    cx.reply(EmptyResult::default())
}

pub(crate) async fn unsubscribe(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let uri = subscription(&cx, method::RESOURCES_UNSUBSCRIBE)?;
    subscriptions(&cx).remove(&uri);
    cx.reply(EmptyResult::default())
}

/// The URI a (un)subscription names, if this server takes subscriptions at all.
fn subscription(cx: &ServerContext, method: &str) -> Result<String, ErrorObject> {
    if !cx.server().inner.subscriptions {
        return Err(ErrorObject::method_not_found(method));
    }
    Ok(cx.request().head().uri.required("uri")?.clone())
}

fn subscriptions(
    cx: &ServerContext,
) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
    cx.connection()
        .subscriptions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}
