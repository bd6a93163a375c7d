//! A client of the local API, used by the CLI to act through a running engine.

use crate::api::{Call, Operation, Request, ServerLine, MAX_LINE};
use overseer_core::{ApiError, EngineEvent, ErrorCode};
use std::path::Path;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

pub struct Client {
    reader: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    next_id: u64,
    /// What must live as long as the connection (an `ssh` child process).
    _keep: Option<Box<dyn std::any::Any + Send>>,
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
                Ok(Some(Client::over(r, w, None)))
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

    /// A client over any byte stream that speaks the socket's protocol (a
    /// host's engine through `ssh HOST overseer bridge`); `keep` lives as
    /// long as the client.
    pub fn over(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        keep: Option<Box<dyn std::any::Any + Send>>,
    ) -> Client {
        Client {
            reader: BufReader::new(Box::new(reader)),
            writer: Box::new(writer),
            next_id: 1,
            _keep: keep,
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
        self.writer.flush().await.map_err(lost)?;
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
