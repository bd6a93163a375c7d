//! Supervisor evaluators behind one trait: the deterministic rules (in
//! `supervise`), an external reviewer command, and an OpenAI-compatible
//! chat-completions endpoint. Every failure is an error the caller records
//! as an `escalate` decision: an evaluator never approves on error.

use futures::future::BoxFuture;
use overseer_core::supervision::{EvaluatorOutput, Subject, SupervisorPolicy, Verdict};
use overseer_core::{GateView, RunView};
use serde::{Deserialize, Serialize};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Version stamp of the evaluator prompt, recorded with every LLM decision.
pub const PROMPT_VERSION: &str = "overseer-supervisor/1";

/// Longest verdict a command or an endpoint may return.
const MAX_OUTPUT: usize = 1 << 20;
/// How much of stderr or an error body is kept.
const TAIL: usize = 2048;

/// What an evaluator is asked: the JSON the reviewer command gets on stdin
/// and the LLM gets as its user message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvaluationRequest {
    pub subject: Subject,
    pub run: RunView,
    pub gate: Option<GateView>,
    /// For steps: what the agent did, the plan, files, sensors, drift, confidence.
    pub step: Option<serde_json::Value>,
    pub policy: SupervisorPolicy,
    pub allowed_verdicts: Vec<Verdict>,
}

#[derive(Debug, thiserror::Error)]
pub enum EvaluatorError {
    #[error("the supervisor did not answer within {after_ms} ms; raise timeout_seconds or check the evaluator")]
    Timeout { after_ms: u64 },
    #[error(
        "the supervisor command could not start: {0}; check the command in the supervisor policy"
    )]
    Spawn(String),
    #[error("the supervisor command exited with {}: {stderr}; run it by hand with the request JSON to see why", code.map_or("a signal".to_owned(), |c| format!("status {c}")))]
    Exit { code: Option<i32>, stderr: String },
    #[error("the supervisor's answer is not a verdict: {0}")]
    Garbage(String),
    #[error("the supervisor endpoint answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error(
        "the supervisor endpoint cannot be reached: {0}; check base_url and that the server runs"
    )]
    Transport(String),
    #[error("the supervisor answered {}, which does not apply to a {}", verdict.as_str(), match subject { Subject::Gate => "gate", Subject::Step => "step" })]
    Unfit { verdict: Verdict, subject: Subject },
}

impl EvaluatorError {
    pub fn code(&self) -> &'static str {
        match self {
            EvaluatorError::Timeout { .. } => "timeout",
            EvaluatorError::Spawn(_) => "spawn",
            EvaluatorError::Exit { .. } => "exit",
            EvaluatorError::Garbage(_) => "garbage",
            EvaluatorError::Http { .. } => "http",
            EvaluatorError::Transport(_) => "transport",
            EvaluatorError::Unfit { .. } => "unfit",
        }
    }
}

pub trait Evaluator: Send + Sync {
    /// Recorded with every decision: `rules`, `command:<program>`, `openai:<model>`.
    fn id(&self) -> String;
    fn evaluate<'a>(
        &'a self,
        req: &'a EvaluationRequest,
    ) -> BoxFuture<'a, Result<EvaluatorOutput, EvaluatorError>>;
}

/// Runs `ev` within `timeout` and checks the verdict fits the subject.
pub async fn evaluate_with_timeout(
    ev: &dyn Evaluator,
    req: &EvaluationRequest,
    timeout: Duration,
) -> Result<EvaluatorOutput, EvaluatorError> {
    let out = tokio::time::timeout(timeout, ev.evaluate(req))
        .await
        .map_err(|_| EvaluatorError::Timeout {
            after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        })??;
    if !out.verdict.fits(req.subject) {
        return Err(EvaluatorError::Unfit {
            verdict: out.verdict,
            subject: req.subject,
        });
    }
    Ok(out)
}

fn tail(s: &str) -> String {
    let n = s.chars().count();
    s.chars()
        .skip(n.saturating_sub(TAIL))
        .collect::<String>()
        .trim()
        .to_owned()
}

#[derive(Deserialize)]
struct RawVerdict {
    verdict: serde_json::Value,
    rationale: Option<serde_json::Value>,
    correction: Option<String>,
    confidence: Option<serde_json::Value>,
    rule_ref: Option<String>,
    model_id: Option<String>,
    prompt_version: Option<String>,
}

/// Parses one verdict object: `{"verdict", "rationale", "correction"?,
/// "confidence"?, "rule_ref"?}`.
pub fn parse_verdict(text: &str) -> Result<EvaluatorOutput, EvaluatorError> {
    let text = strip_fences(text.trim());
    let raw: RawVerdict = serde_json::from_str(text).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        EvaluatorError::Garbage(format!(
            "expected one JSON object {{\"verdict\", \"rationale\", ...}} ({e}); got: {shown}"
        ))
    })?;
    let accepted = Verdict::ALL.map(|v| v.as_str().to_uppercase()).join(", ");
    let verdict = raw
        .verdict
        .as_str()
        .and_then(Verdict::parse)
        .ok_or_else(|| {
            EvaluatorError::Garbage(format!(
                "unknown verdict {}; accepted: {accepted}",
                raw.verdict
            ))
        })?;
    let rationale = raw
        .rationale
        .as_ref()
        .and_then(|r| r.as_str())
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| EvaluatorError::Garbage("the verdict has no rationale".to_owned()))?
        .to_owned();
    let confidence = match raw.confidence {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Some(c),
            _ => {
                return Err(EvaluatorError::Garbage(format!(
                    "confidence {v} is not a number from 0 to 1"
                )))
            }
        },
    };
    Ok(EvaluatorOutput {
        verdict,
        rationale,
        correction: raw.correction.filter(|c| !c.trim().is_empty()),
        confidence,
        rule_ref: raw.rule_ref,
        model_id: raw.model_id,
        prompt_version: raw.prompt_version,
    })
}

fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// An external reviewer: the request JSON on stdin, one verdict on stdout.
pub struct CommandEvaluator {
    pub command: String,
    pub args: Vec<String>,
    pub timeout: Duration,
}

impl CommandEvaluator {
    async fn run(&self, req: &EvaluationRequest) -> Result<EvaluatorOutput, EvaluatorError> {
        let input = serde_json::to_vec(req).map_err(|e| EvaluatorError::Garbage(e.to_string()))?;
        let mut child = tokio::process::Command::new(&self.command)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| EvaluatorError::Spawn(format!("{}: {e}", self.command)))?;
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take();
        // stderr on its own task: a reviewer that fills it must not stall.
        let err_task = child.stderr.take().map(|mut s| {
            tokio::spawn(async move {
                let mut err = Vec::new();
                let _ = (&mut s).take(64 * 1024).read_to_end(&mut err).await;
                // Drain the rest so the reviewer never blocks on it.
                let _ = tokio::io::copy(&mut s, &mut tokio::io::sink()).await;
                err
            })
        });
        let work = async {
            if let Some(mut s) = stdin.take() {
                // A reviewer that does not read its input is fine.
                let _ = s.write_all(&input).await;
                let _ = s.write_all(b"\n").await;
                drop(s);
            }
            let mut out = Vec::new();
            if let Some(s) = stdout.as_mut() {
                let _ = s.take(MAX_OUTPUT as u64 + 1).read_to_end(&mut out).await;
            }
            if out.len() > MAX_OUTPUT {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(EvaluatorError::Garbage(
                    "output larger than 1 MiB".to_owned(),
                ));
            }
            let status = child.wait().await;
            Ok((out, status))
        };
        let (out, status) = tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| EvaluatorError::Timeout {
                after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            })??;
        let err = match err_task {
            Some(t) => t.await.unwrap_or_default(),
            None => Vec::new(),
        };
        let status = status.map_err(|e| EvaluatorError::Spawn(e.to_string()))?;
        if !status.success() {
            return Err(EvaluatorError::Exit {
                code: status.code(),
                stderr: tail(&String::from_utf8_lossy(&err)),
            });
        }
        if out.len() > MAX_OUTPUT {
            return Err(EvaluatorError::Garbage(
                "output larger than 1 MiB".to_owned(),
            ));
        }
        let text = String::from_utf8(out)
            .map_err(|_| EvaluatorError::Garbage("output is not UTF-8".to_owned()))?;
        parse_verdict(&text)
    }
}

impl Evaluator for CommandEvaluator {
    fn id(&self) -> String {
        format!("command:{}", self.command)
    }

    fn evaluate<'a>(
        &'a self,
        req: &'a EvaluationRequest,
    ) -> BoxFuture<'a, Result<EvaluatorOutput, EvaluatorError>> {
        Box::pin(self.run(req))
    }
}

/// An OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp, vLLM,
/// hosted providers).
pub struct OpenAiEvaluator {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
}

const SYSTEM_PROMPT: &str = "You are the supervisor of an AI coding agent in Overseer (prompt overseer-supervisor/1). \
You receive one JSON object: the run, the gate or the finished step, and the user's supervision policy. \
Answer with ONLY one JSON object: {\"verdict\": ..., \"rationale\": ..., \"correction\": ..., \"confidence\": 0..1}. \
The verdict must be one of allowed_verdicts. For a gate: approve, reject, escalate (hand it to the human, with why) or advise. \
For a step, follow this order: the agent's interpretation is fundamentally wrong -> PAUSE; it went outside its declared scope \
and the action was destructive or irreversible -> PAUSE; outside scope otherwise -> REORIENT with a correction; the approach is \
suboptimal but the goal is achieved -> CONTINUE; it raised valid critical concerns -> PAUSE; otherwise CONTINUE. \
Never approve what you are unsure of: escalate instead.";

impl OpenAiEvaluator {
    pub fn from_config(
        base_url: &str,
        model: &str,
        api_key_env: Option<&str>,
        timeout: Duration,
    ) -> Self {
        OpenAiEvaluator {
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key: api_key_env
                .and_then(|name| std::env::var(name).ok())
                .filter(|k| !k.is_empty()),
            timeout,
        }
    }

    fn call(&self, body: serde_json::Value) -> Result<EvaluatorOutput, EvaluatorError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let mut request = agent.post(&url).header("content-type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("authorization", &format!("Bearer {key}"));
        }
        let mut response = request.send_json(&body).map_err(|e| match e {
            ureq::Error::Timeout(_) => EvaluatorError::Timeout {
                after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            },
            other => EvaluatorError::Transport(other.to_string()),
        })?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_OUTPUT as u64)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => EvaluatorError::Timeout {
                    after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
                },
                other => EvaluatorError::Garbage(format!("unreadable response: {other}")),
            })?;
        if !(200..300).contains(&status) {
            return Err(EvaluatorError::Http {
                status,
                body: tail(&text),
            });
        }
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            EvaluatorError::Garbage(format!("the endpoint did not answer JSON ({e})"))
        })?;
        let content = json["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| {
                EvaluatorError::Garbage(
                    "no choices[0].message.content in the chat-completions answer".to_owned(),
                )
            })?;
        let mut out = parse_verdict(content)?;
        out.model_id = json["model"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| Some(self.model.clone()));
        out.prompt_version = Some(PROMPT_VERSION.to_owned());
        Ok(out)
    }
}

impl Evaluator for OpenAiEvaluator {
    fn id(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn evaluate<'a>(
        &'a self,
        req: &'a EvaluationRequest,
    ) -> BoxFuture<'a, Result<EvaluatorOutput, EvaluatorError>> {
        Box::pin(async move {
            let user =
                serde_json::to_string(req).map_err(|e| EvaluatorError::Garbage(e.to_string()))?;
            let body = serde_json::json!({
                "model": self.model,
                "temperature": 0,
                "response_format": {"type": "json_object"},
                "messages": [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user},
                ],
            });
            let me = OpenAiEvaluator {
                base_url: self.base_url.clone(),
                model: self.model.clone(),
                api_key: self.api_key.clone(),
                timeout: self.timeout,
            };
            tokio::task::spawn_blocking(move || me.call(body))
                .await
                .map_err(|e| EvaluatorError::Transport(e.to_string()))?
        })
    }
}
