//! A client of the local API, used by the CLI to act through a running engine.

use crate::api::{Call, Operation, Request, ServerLine, MAX_LINE};
use overseer_core::{ApiError, EngineEvent, ErrorCode};
use std::path::Path;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
}

fn lost(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::EngineUnavailable,
        format!("lost the connection to the engine ({e}); is it still running?"),
    )
}

impl Client {
    /// Connects to the engine at `socket`; `Ok(None)` when none is running.
    pub async fn connect(socket: &Path) -> Result<Option<Client>, ApiError> {
        match UnixStream::connect(socket).await {
            Ok(stream) => {
                let (r, w) = stream.into_split();
                Ok(Some(Client {
                    reader: BufReader::new(r),
                    writer: w,
                    next_id: 1,
                }))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(ApiError::new(
                ErrorCode::EngineUnavailable,
                format!("cannot reach the engine at {}: {e}", socket.display()),
            )),
        }
    }

    async fn read_line(&mut self) -> Result<ServerLine, ApiError> {
        let mut line = String::new();
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 * 16)
            .read_line(&mut line)
            .await
            .map_err(lost)?;
        if n == 0 {
            return Err(lost("closed"));
        }
        serde_json::from_str(&line).map_err(|e| {
            ApiError::new(
                ErrorCode::Internal,
                format!("unreadable reply from the engine: {e}"),
            )
        })
    }

    /// Sends one request and waits for its answer.
    pub async fn call(&mut self, request: Request) -> Result<serde_json::Value, ApiError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut bytes = serde_json::to_vec(&Call { id, request })
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        bytes.push(b'\n');
        self.writer.write_all(&bytes).await.map_err(lost)?;
        loop {
            match self.read_line().await? {
                ServerLine::Result {
                    id: Some(got),
                    result,
                } if got == id => return Ok(result),
                ServerLine::Error {
                    id: Some(got),
                    error,
                } if got == id => return Err(error),
                ServerLine::Error { id: None, error } => return Err(error),
                ServerLine::Result { .. } | ServerLine::Error { .. } | ServerLine::Event { .. } => {
                }
            }
        }
    }

    /// Runs one operation of the table and decodes its typed answer.
    pub async fn perform<O>(&mut self, op: O) -> Result<O::Response, ApiError>
    where
        O: Operation + Into<Request>,
        O::Response: serde::de::DeserializeOwned,
    {
        let value = self.call(op.into()).await?;
        serde_json::from_value(value).map_err(|e| {
            ApiError::new(
                ErrorCode::Internal,
                format!("unreadable answer from the engine ({e}); are both the same version?"),
            )
        })
    }

    /// Subscribes; then call [`Client::next_event`] repeatedly.
    pub async fn subscribe(&mut self) -> Result<(), ApiError> {
        self.call(Request::Subscribe).await.map(|_| ())
    }

    pub async fn next_event(&mut self) -> Result<EngineEvent, ApiError> {
        loop {
            if let ServerLine::Event { event } = self.read_line().await? {
                return Ok(*event);
            }
        }
    }
}
