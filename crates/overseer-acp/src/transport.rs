//! Newline-delimited JSON-RPC over the agent's pipes, with a gate on what the
//! agent writes.
//!
//! The crate's own byte-stream transport ends the connection on the first line
//! that is not UTF-8 and buffers a line of any length. An agent is untrusted
//! and sometimes prints banners or debug output to stdout, so the driver reads
//! lines itself: a line longer than [`MAX_LINE_BYTES`] is skipped without being
//! held in memory, and a line that is not UTF-8, not JSON or not a JSON-RPC
//! object is skipped too. Each skip is reported as
//! [`AgentSignal::ProtocolError`] and the connection goes on. (Such a line has
//! no usable id, so there is nobody to answer.)
//!
//! Lines that are JSON-RPC go on to the crate. For the methods the driver
//! serves, the parameters are checked here first, so a malformed request or
//! update is also reported (the crate then answers the agent with the
//! JSON-RPC error, or drops a notification).

use crate::signal::AgentSignal;
use agent_client_protocol::v1::schema as acp;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::io;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line the driver accepts from an agent. File contents travel in
/// one line (`fs/write_text_file`), so this also bounds what an agent can write
/// through the client in one request.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// How much of a bad line is quoted in its report.
const PREVIEW_CHARS: usize = 80;

/// The transport the crate drives: our line reader and a line writer.
pub(super) fn lines<R, W>(
    stdout_of_agent: R,
    stdin_of_agent: W,
    reports: mpsc::Sender<AgentSignal>,
) -> agent_client_protocol::Lines<
    impl futures::Sink<String, Error = io::Error> + Send + 'static,
    impl futures::Stream<Item = io::Result<String>> + Send + 'static,
>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let reader = LineReader {
        inner: BufReader::new(stdout_of_agent),
        buf: Vec::new(),
        reports,
    };
    let incoming = futures::stream::unfold(reader, |mut reader| async move {
        reader.next_line().await.map(|line| (line, reader))
    });
    let outgoing = futures::sink::unfold(stdin_of_agent, |mut w, line: String| async move {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        w.write_all(&bytes).await?;
        w.flush().await?;
        Ok::<_, io::Error>(w)
    });
    agent_client_protocol::Lines::new(outgoing, incoming)
}

struct LineReader<R> {
    inner: BufReader<R>,
    buf: Vec<u8>,
    reports: mpsc::Sender<AgentSignal>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// The next line worth giving to the crate; `None` at end of input.
    async fn next_line(&mut self) -> Option<io::Result<String>> {
        loop {
            let length = match self.read_raw_line().await {
                Ok(Some(length)) => length,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            if length > MAX_LINE_BYTES {
                self.report(format!(
                    "the agent wrote a line of {length} bytes to stdout, over the limit of \
                     {MAX_LINE_BYTES}; it was skipped"
                ))
                .await;
                continue;
            }
            let raw = std::mem::take(&mut self.buf);
            let line = match String::from_utf8(raw) {
                Ok(line) => line,
                Err(e) => {
                    let preview = preview(&String::from_utf8_lossy(e.as_bytes()));
                    self.report(format!(
                        "the agent wrote a line to stdout that is not UTF-8; it was skipped: {preview}"
                    ))
                    .await;
                    continue;
                }
            };
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            match check(line) {
                Verdict::Pass => return Some(Ok(line.to_owned())),
                Verdict::PassReported(detail) => {
                    self.report(detail).await;
                    return Some(Ok(line.to_owned()));
                }
                Verdict::Skip(detail) => self.report(detail).await,
            }
        }
    }

    /// Reads up to the next newline into `buf` (which stays empty for a line
    /// over the limit, so a huge line costs no memory); returns the line's
    /// full length, or `None` at a clean end of input.
    async fn read_raw_line(&mut self) -> io::Result<Option<usize>> {
        self.buf.clear();
        let mut length = 0usize;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok((length > 0).then_some(length));
            }
            let (chunk, consumed, done) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            length = length.saturating_add(chunk.len());
            if length <= MAX_LINE_BYTES {
                self.buf.extend_from_slice(chunk);
            } else if !self.buf.is_empty() {
                self.buf = Vec::new();
            }
            self.inner.consume(consumed);
            if done {
                return Ok(Some(length));
            }
        }
    }

    async fn report(&mut self, detail: String) {
        tracing::warn!(%detail, "agent protocol error");
        // Nobody listening is fine: the skip already happened.
        let _ = self
            .reports
            .send(AgentSignal::ProtocolError { detail })
            .await;
    }
}

enum Verdict {
    Pass,
    PassReported(String),
    Skip(String),
}

fn check(line: &str) -> Verdict {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => {
            return Verdict::Skip(format!(
                "the agent wrote a line to stdout that is not JSON ({e}); it was skipped: {}",
                preview(line)
            ))
        }
    };
    let Value::Object(object) = &value else {
        return Verdict::Skip(format!(
            "the agent wrote JSON that is not a JSON-RPC message; it was skipped: {}",
            preview(line)
        ));
    };
    if !["method", "result", "error"]
        .iter()
        .any(|k| object.contains_key(*k))
    {
        return Verdict::Skip(format!(
            "the agent wrote a JSON object that is not a JSON-RPC message; it was skipped: {}",
            preview(line)
        ));
    }
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        return Verdict::Pass;
    };
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    let problem = match method {
        "session/update" => session_update_problem(params),
        "session/request_permission" => params_problem::<acp::RequestPermissionRequest>(params),
        "fs/read_text_file" => params_problem::<acp::ReadTextFileRequest>(params),
        "fs/write_text_file" => params_problem::<acp::WriteTextFileRequest>(params),
        "elicitation/create" => params_problem::<acp::CreateElicitationRequest>(params),
        _ => None,
    };
    match problem {
        Some(problem) => Verdict::PassReported(format!(
            "the agent sent `{method}` with parameters that do not match ACP v1: {problem}"
        )),
        None => Verdict::Pass,
    }
}

fn params_problem<T: DeserializeOwned>(params: Value) -> Option<String> {
    serde_json::from_value::<T>(params)
        .err()
        .map(|e| e.to_string())
}

/// Like [`params_problem`], except that an update kind this version does not
/// know is not a problem: newer agents send newer kinds, and they are ignored.
fn session_update_problem(params: Value) -> Option<String> {
    let problem = params_problem::<acp::SessionNotification>(params)?;
    (!problem.contains("unknown variant")).then_some(problem)
}

/// The start of an untrusted line, quoted, for a report.
fn preview(line: &str) -> String {
    let mut cut: String = line.chars().take(PREVIEW_CHARS).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;

    async fn read_all(input: Vec<u8>) -> (Vec<String>, Vec<String>) {
        let (mut agent_side, driver_side) = tokio::io::duplex(64 * 1024);
        let (tx, mut rx) = mpsc::channel(64);
        let reader = LineReader {
            inner: BufReader::new(driver_side),
            buf: Vec::new(),
            reports: tx,
        };
        let writer = tokio::spawn(async move {
            agent_side.write_all(&input).await.expect("write");
        });
        let lines: Vec<String> = futures::stream::unfold(reader, |mut r| async move {
            r.next_line().await.map(|l| (l, r))
        })
        .map(|l| l.expect("line"))
        .collect()
        .await;
        writer.await.expect("writer");
        let mut reports = Vec::new();
        while let Ok(AgentSignal::ProtocolError { detail }) = rx.try_recv() {
            reports.push(detail);
        }
        (lines, reports)
    }

    #[tokio::test]
    async fn json_rpc_lines_pass_and_garbage_is_reported_and_skipped() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n");
        input.extend_from_slice(b"Loading model...\n");
        input.extend_from_slice(b"\xff\xfe not utf-8\n");
        input.extend_from_slice(b"[1,2]\n");
        input.extend_from_slice(b"{\"hello\":1}\n");
        input.extend_from_slice(b"\n   \n");
        input.extend_from_slice(&vec![b'x'; MAX_LINE_BYTES + 10]);
        input.push(b'\n');
        input.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}}",
        );
        let (lines, reports) = read_all(input).await;
        assert_eq!(
            lines,
            vec![
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_owned(),
                "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}}".to_owned(),
            ]
        );
        assert_eq!(reports.len(), 5, "{reports:#?}");
        assert!(reports[0].contains("not JSON") && reports[0].contains("Loading model"));
        assert!(reports[1].contains("not UTF-8"));
        assert!(reports[2].contains("not a JSON-RPC message"));
        assert!(reports[3].contains("not a JSON-RPC message"));
        assert!(reports[4].contains("over the limit"));
    }

    #[tokio::test]
    async fn a_request_the_driver_serves_with_bad_params_is_passed_on_and_reported() {
        let input =
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"fs/write_text_file\",\"params\":{\"path\":3}}\n"
                .to_vec();
        let (lines, reports) = read_all(input).await;
        assert_eq!(lines.len(), 1, "the crate still answers it with an error");
        assert_eq!(reports.len(), 1);
        assert!(reports[0].contains("fs/write_text_file"));
    }

    #[tokio::test]
    async fn an_update_kind_from_a_newer_protocol_is_not_an_error() {
        let input = b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"hologram\"}}}\n".to_vec();
        let (lines, reports) = read_all(input).await;
        assert_eq!(lines.len(), 1);
        assert!(reports.is_empty(), "{reports:?}");
    }

    #[test]
    fn a_preview_is_short_and_quoted() {
        let long = "a".repeat(500);
        let p = preview(&long);
        assert!(p.starts_with('"') && p.chars().count() < 90);
        assert_eq!(preview("line\u{1b}[31m"), "\"line\\u{1b}[31m\"");
    }
}
