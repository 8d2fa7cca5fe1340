//! Reading an HTTP answer's body under a size cap, for every document the OAuth code
//! fetches (metadata, key sets, introspection answers).

use futures_util::StreamExt;

/// Why a capped body could not be read.
#[derive(Debug)]
pub(crate) enum CappedBody {
    /// Over the cap (declared or received).
    TooLarge,
    /// The connection failed.
    Network(reqwest::Error),
}

/// The body of `response`, or [`CappedBody::TooLarge`] as soon as it is known to exceed
/// `limit` bytes: a declared length over the cap fails before any byte is read.
pub(crate) async fn read_capped(
    response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, CappedBody> {
    if response
        .content_length()
        .is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX))
    {
        return Err(CappedBody::TooLarge);
    }
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(CappedBody::Network)?;
        if body.len() + chunk.len() > limit {
            return Err(CappedBody::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
