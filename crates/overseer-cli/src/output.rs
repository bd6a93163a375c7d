//! Human-readable output. Agent-controlled text is printed with control
//! characters escaped so it cannot drive the terminal.

use overseer_core::audit::AuditPayload;
use overseer_core::{cost_totals, format_cost, GateView, RunState, RunView};
use std::fmt::Write;

/// Escapes control characters (ANSI escapes, carriage returns) and bidi
/// controls (an RTL override would reorder the rest of the line) in
/// untrusted text.
pub fn inert(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() || is_bidi_control(c) {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Characters that change the order text is shown in: embeddings,
/// overrides, isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E,
/// U+200F, U+061C).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Like [`inert`], but keeps line breaks (for diffs).
pub fn inert_lines(s: &str) -> String {
    s.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(body) => format!("{}\n", inert(body)),
            None => inert(line),
        })
        .collect()
}

/// The timeline, one line per entry.
pub fn activity(items: &[overseer_core::ActivityView], now: i64) -> String {
    let mut out = String::new();
    for a in items {
        let _ = writeln!(
            out,
            "{:>5}  {:<12} {}",
            age(a.at, now),
            inert(&a.kind()),
            inert(&a.entry.text())
        );
    }
    if items.is_empty() {
        out.push_str("nothing happened in this run yet\n");
    }
    out
}

pub fn state_label(run: &RunView) -> String {
    match run.state {
        RunState::Released { reason } => format!("released ({})", reason.as_str()),
        other => other.to_db(),
    }
}

pub fn age(since: i64, now: i64) -> String {
    let s = (now - since).max(0) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// The run's reported cumulative cost (`-` before its agent reports one).
fn cost_cell(r: &RunView) -> String {
    r.usage
        .as_ref()
        .and_then(|u| u.cost.as_ref())
        .map_or_else(|| "-".to_owned(), |c| inert(&format_cost(c)))
}

pub fn runs_table(runs: &[RunView], now: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<10} {:<30} {:>5}  {:<12} {:<12} {:>14}  TASK",
        "ID", "", "STATE", "AGE", "AGENT", "WORKSPACE", "COST"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:>5}  {:<10} {:<30} {:>5}  {:<12} {:<12} {:>14}  {}",
            r.id,
            if r.needs_you { "NEEDS YOU" } else { "" },
            state_label(r),
            age(r.state_since, now),
            inert(&r.agent),
            inert(&r.workspace),
            cost_cell(r),
            inert(&r.task_title)
        );
    }
    if runs.is_empty() {
        out.push_str("no runs yet: start one, or try `overseer demo seed`\n");
    }
    let totals = cost_totals(runs);
    if !totals.is_empty() {
        let _ = writeln!(out, "total cost of these runs: {}", costs(&totals));
    }
    // Per workspace too, once the runs shown span more than one.
    let mut workspaces: Vec<&str> = runs.iter().map(|r| r.workspace.as_str()).collect();
    workspaces.sort_unstable();
    workspaces.dedup();
    if workspaces.len() > 1 {
        for w in workspaces {
            let totals = cost_totals(runs.iter().filter(|r| r.workspace == w));
            if !totals.is_empty() {
                let _ = writeln!(out, "  in {}: {}", inert(w), costs(&totals));
            }
        }
    }
    out
}

/// Totals per currency, as people read them: `0.75 USD, 3.00 credits`.
fn costs(totals: &[overseer_core::RunCost]) -> String {
    let each: Vec<String> = totals.iter().map(|c| inert(&format_cost(c))).collect();
    each.join(", ")
}

pub fn run_detail(r: &RunView, now: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "run {}  {}", r.id, inert(&r.task_title));
    let _ = writeln!(
        out,
        "  state      {} (for {})",
        state_label(r),
        age(r.state_since, now)
    );
    let _ = writeln!(out, "  agent      {}", inert(&r.agent));
    let _ = writeln!(out, "  workspace  {}", inert(&r.workspace));
    let _ = writeln!(out, "  task       {}", r.task_id);
    if let Some(g) = &r.pending_gate {
        let _ = writeln!(
            out,
            "  NEEDS YOU  gate {} ({}): `overseer gates show {}`",
            g.id,
            g.kind.as_str(),
            g.id
        );
    } else if r.needs_you {
        let _ = writeln!(out, "  NEEDS YOU  review: `overseer runs approve {}` or `overseer runs reject {} --reason ...`", r.id, r.id);
    }
    if let Some(u) = r.usage.as_deref() {
        if let Some(c) = &u.cost {
            let budget = r
                .max_cost
                .map(|b| format!(" of a budget of {b} {}", inert(&c.currency)))
                .unwrap_or_default();
            let _ = writeln!(out, "  cost       {}{budget}", inert(&format_cost(c)));
        }
        let share = u
            .used
            .saturating_mul(100)
            .checked_div(u.size)
            .map(|p| format!(" ({p}%)"))
            .unwrap_or_default();
        let _ = writeln!(out, "  context    {} of {} tokens{share}", u.used, u.size);
    } else if let Some(b) = r.max_cost {
        let _ = writeln!(out, "  budget     {b} (no cost reported yet)");
    }
    if let Some(note) = &r.release_note {
        let _ = writeln!(out, "  note       {}", inert(note));
    }
    out
}

pub fn gates_table(gates: &[GateView], now: i64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:>5}  {:<16} {:<9} {:>5}  TITLE",
        "GATE", "RUN", "KIND", "STATUS", "AGE"
    );
    for g in gates {
        let _ = writeln!(
            out,
            "{:>5}  {:>5}  {:<16} {:<9} {:>5}  {}",
            g.id,
            g.run_id,
            g.kind().as_str(),
            g.status.as_str(),
            age(g.opened_at, now),
            inert(&g.title)
        );
    }
    if gates.is_empty() {
        out.push_str("nothing waits for you\n");
    }
    out
}

pub fn gate_detail(g: &GateView) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gate {} ({}) on run {}: {}",
        g.id,
        g.kind().as_str(),
        g.run_id,
        inert(&g.title)
    );
    let _ = writeln!(out, "  status  {}", g.status.as_str());
    if let overseer_core::GateBody::MergeReview(review) = &g.body {
        for f in &review.auto_run {
            let _ = writeln!(out, "  AUTO-RUN {}: {}", inert(&f.path), inert(&f.runs));
        }
    }
    for o in &g.options {
        let _ = writeln!(
            out,
            "  option  {:<14} {}{}",
            o.id,
            inert(&o.label),
            if o.requires_context {
                " (needs a reason)"
            } else {
                ""
            }
        );
    }
    if let Some(p) = &g.pending_effect {
        let _ = writeln!(
            out,
            "  the supervisor decided '{}' ({}): it takes effect at {} unless you decide otherwise (`overseer gates hold {}` keeps the gate for you)",
            p.option,
            p.verdict.as_str(),
            p.at,
            g.id
        );
    }
    if let Some(d) = &g.decision {
        let _ = writeln!(
            out,
            "  decided {} by {}{}",
            d.option,
            inert(&d.who_and_when()),
            d.context
                .as_deref()
                .map(|c| format!(": {}", inert(c)))
                .unwrap_or_default()
        );
    }
    out
}

/// The "Why?" story: every audit record about a gate in order, each with its
/// chain position and whether its signature verified; then the decisions with
/// their rationale.
pub fn gate_story(story: &overseer_engine::GateStory) -> String {
    let mut out = gate_detail(&story.gate);
    let g = &story.gate;
    if let Some(at) = g.auto_at {
        let _ = writeln!(
            out,
            "  timer   at {} chooses '{}'",
            at,
            g.auto_option.as_deref().unwrap_or("?")
        );
    }
    if let Some(a) = g.authority {
        let _ = writeln!(out, "  supervisor authority: {}", a.as_str());
    }
    out.push_str(&story_records(
        &story.records,
        &story.decision_problems,
        story.verified,
        "this gate",
    ));
    out
}

/// The rule a decision cites, with its layer when the decision names it
/// (`Edit(src/**) (task rule)`); decisions recorded before layers were
/// typed show their rule alone (their rationale names the layer).
fn rule_shown(
    rule_ref: Option<&str>,
    provenance: Option<&overseer_core::rules::Provenance>,
) -> Option<String> {
    match provenance {
        Some(p) if !p.0.is_empty() => Some(format!("{} ({})", inert(&p.rule()), p.layers())),
        Some(_) | None => rule_ref.map(inert),
    }
}

/// A run's whole story: everything that decided anything on it.
pub fn run_story(story: &overseer_engine::RunStory, now: i64) -> String {
    let mut out = run_detail(&story.run, now);
    let _ = writeln!(out, "\ndecisions (oldest first):");
    for d in &story.decisions {
        let _ = writeln!(
            out,
            "  {}{:<22} {:<10} {}{}{}",
            d.gate_id
                .map(|g| format!("gate {g:<5} "))
                .unwrap_or_else(|| "           ".to_owned()),
            inert(&overseer_core::device::actor_text(&d.actor)),
            d.verdict.as_str(),
            d.option
                .as_deref()
                .map(|o| format!("chose {} ", inert(o)))
                .unwrap_or_default(),
            rule_shown(d.rule_ref.as_deref(), d.provenance.as_ref())
                .map(|r| format!("[{r}] "))
                .unwrap_or_default(),
            inert(d.rationale.as_deref().unwrap_or(""))
        );
    }
    if story.decisions.is_empty() {
        out.push_str("  nothing was decided on this run yet\n");
    }
    out.push_str(&story_records(
        &story.records,
        &story.decision_problems,
        story.verified,
        "this run",
    ));
    out
}

/// The audit records of a story, each with its verification, and the verdict.
fn story_records(
    records: &[overseer_store::CheckedRecord],
    problems: &[overseer_store::DecisionMismatch],
    verified: bool,
    about: &str,
) -> String {
    let mut out = String::from("\nstory (audit log, oldest first):\n");
    for r in records {
        let payload = AuditPayload::parse(&r.record.payload).ok();
        let what = payload.as_ref().map_or("record", AuditPayload::kind);
        // A person's record names the device they acted through (signed
        // with it).
        let device = match &payload {
            Some(
                AuditPayload::GateDecided { device, .. }
                | AuditPayload::RunTransition { device, .. }
                | AuditPayload::UserInstruction { device, .. }
                | AuditPayload::GateTimerStopped { device, .. },
            ) => device.as_ref(),
            Some(AuditPayload::Decision(d)) => d.device.as_ref(),
            _ => None,
        };
        let mut line = format!(
            "  #{:<6} {:<22} {:<26}",
            r.record.seq,
            what,
            inert(&format!(
                "{}{}",
                r.record.actor,
                overseer_core::device::through(device)
            ))
        );
        match &payload {
            Some(AuditPayload::Decision(d)) => {
                let _ = write!(
                    line,
                    " verdict={} option={} rule={} model={} prompt={} confidence={}  {}",
                    d.verdict,
                    d.option.as_deref().unwrap_or("-"),
                    rule_shown(d.rule_ref.as_deref(), d.provenance.as_ref())
                        .unwrap_or_else(|| "-".to_owned()),
                    inert(d.model_id.as_deref().unwrap_or("-")),
                    inert(d.prompt_version.as_deref().unwrap_or("-")),
                    d.confidence.map_or("-".to_owned(), |c| format!("{c:.2}")),
                    inert(d.rationale.as_deref().unwrap_or(""))
                );
            }
            Some(AuditPayload::GateDecided {
                option, context, ..
            }) => {
                let _ = write!(
                    line,
                    " chose {}{}",
                    option,
                    context
                        .as_deref()
                        .map(|c| format!(": {}", inert(c)))
                        .unwrap_or_default()
                );
            }
            _ => {}
        }
        match &r.problem {
            None => line.push_str("  [signature ok, chain ok]"),
            Some(p) => {
                let _ = write!(line, "  [VERIFICATION FAILED: {p:?}]");
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    for m in problems {
        let _ = writeln!(out, "  [NOT VERIFIED] {}", inert(&m.to_string()));
    }
    if verified {
        let _ = writeln!(out, "all {} records verified", records.len());
    } else if !problems.is_empty() {
        let _ = writeln!(
            out,
            "VERIFICATION FAILED: {} decision row(s) about {about} have no matching signed record (written outside Overseer); run `overseer audit verify`",
            problems.len()
        );
    } else {
        let _ = writeln!(
            out,
            "VERIFICATION FAILED: the story of {about} was tampered with; run `overseer audit verify`"
        );
    }
    out
}

/// A supervisor policy: what is set here and what applies.
pub fn policy_status(s: &overseer_engine::PolicyStatus) -> String {
    let mut out = String::new();
    let where_ = match s.scope.task {
        Some(t) => format!("task {t} of workspace {}", inert(&s.scope.workspace)),
        None => format!("workspace {}", inert(&s.scope.workspace)),
    };
    let p = &s.effective;
    let _ = writeln!(
        out,
        "supervisor for {where_}: {}{}",
        if p.enabled { "ENABLED" } else { "disabled" },
        if s.own.is_some() { "" } else { " (inherited)" }
    );
    let _ = writeln!(out, "  autonomy          {}", p.autonomy.as_str());
    for (kind, a) in &p.gate_authority {
        let _ = writeln!(out, "  on {:<15} {}", kind.as_str(), a.as_str());
    }
    let evaluator = match &p.evaluator {
        overseer_core::supervision::EvaluatorConfig::Rules => "rules".to_owned(),
        overseer_core::supervision::EvaluatorConfig::Command { command, args } => {
            format!("command {} {}", command, args.join(" "))
        }
        overseer_core::supervision::EvaluatorConfig::Openai {
            base_url, model, ..
        } => {
            format!("openai {model} at {base_url}")
        }
    };
    let _ = writeln!(out, "  evaluator         {}", inert(&evaluator));
    let _ = writeln!(
        out,
        "  limits            {} reorients, {} s per evaluation, pause waits {} s, {}{}",
        p.max_reorient_attempts,
        p.timeout_seconds,
        p.pause_timeout_seconds,
        match p.grace_seconds {
            0 => "autonomous decisions at once".to_owned(),
            n => format!("autonomous decisions after {n} s"),
        },
        if p.always_supervise {
            ", every step"
        } else {
            ""
        }
    );
    out
}

/// A task's settings, every field said, defaults included.
pub fn task_info(t: &overseer_engine::TaskInfo) -> String {
    let mut out = String::new();
    let s = &t.settings;
    let rules = |v: &[overseer_core::rules::Rule]| {
        if v.is_empty() {
            "-".to_owned()
        } else {
            v.iter()
                .map(|r| inert(&r.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(out, "task {}  {}", t.task_id, inert(&t.title));
    let _ = writeln!(out, "  workspace   {}", inert(&t.workspace));
    let _ = writeln!(out, "  stage       {}", inert(&t.stage));
    let _ = writeln!(out, "  allow       {}", rules(&s.permissions.allow));
    let _ = writeln!(out, "  ask         {}", rules(&s.permissions.ask));
    let _ = writeln!(out, "  deny        {}", rules(&s.permissions.deny));
    let _ = writeln!(out, "  approval    {:?}", s.approval);
    let _ = writeln!(
        out,
        "  session     {}",
        match s.session {
            overseer_core::rules::SessionMode::Normal => "normal",
            overseer_core::rules::SessionMode::ReadOnly => "read-only",
        }
    );
    let _ = writeln!(
        out,
        "  plan        {}",
        s.plan.map_or("the profile's", |p| p.as_str())
    );
    let _ = writeln!(
        out,
        "  mode        {}",
        s.mode.as_deref().map_or("the profile's".to_owned(), inert)
    );
    let _ = writeln!(
        out,
        "  supervisor  {}",
        match &s.supervisor {
            Some(p) if p.enabled => format!("own policy, enabled ({})", p.autonomy.as_str()),
            Some(_) => "own policy, disabled".to_owned(),
            None => "the workspace's".to_owned(),
        }
    );
    let _ = writeln!(
        out,
        "  retries     {}",
        match &s.retry {
            Some(r) => format!(
                "up to {} unattended, from {}s",
                r.max_attempts, r.backoff_seconds
            ),
            None => "the workspace's (off unless set)".to_owned(),
        }
    );
    if let Some(q) = s.question_timeout_seconds {
        let _ = writeln!(out, "  questions   take their defaults after {q}s");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_print_their_cost_and_the_total_per_currency() {
        let run = |id: i64, cost: Option<(f64, &str)>| -> RunView {
            serde_json::from_value(serde_json::json!({
                "id": id, "task_id": id, "task_title": "t", "workspace": "w",
                "agent": "demo", "state": overseer_core::RunState::Running, "state_since": 0,
                "created_at": 0, "needs_you": false, "release_note": null,
                "pending_gate": null,
                "usage": cost.map(|(amount, currency)| serde_json::json!({
                    "used": 50_000, "size": 200_000,
                    "cost": {"amount": amount, "currency": currency}
                })),
                "max_cost": 2.0,
            }))
            .expect("a run view")
        };
        let runs = [
            run(1, Some((0.5, "USD"))),
            run(2, Some((0.25, "USD"))),
            run(3, Some((3.0, "credits"))),
            run(4, None),
        ];
        let table = runs_table(&runs, 0);
        assert!(
            table.lines().nth(1).is_some_and(|l| l.contains("0.50 USD")),
            "{table}"
        );
        assert!(
            table.lines().nth(4).is_some_and(|l| l.contains(" - ")),
            "{table}"
        );
        assert!(
            table.ends_with("total cost of these runs: 0.75 USD, 3.00 credits\n"),
            "{table}"
        );
        // Runs of two workspaces: each workspace's total after the whole.
        let mut other = run(5, Some((1.0, "USD")));
        other.workspace = "api".into();
        let mut two = runs.to_vec();
        two.push(other);
        let table = runs_table(&two, 0);
        assert!(
            table.ends_with(
                "total cost of these runs: 1.75 USD, 3.00 credits\n  in api: 1.00 USD\n  in w: 0.75 USD, 3.00 credits\n"
            ),
            "{table}"
        );
        let detail = run_detail(&runs[0], 0);
        assert!(
            detail.contains("cost       0.50 USD of a budget of 2 USD"),
            "{detail}"
        );
        assert!(
            detail.contains("context    50000 of 200000 tokens (25%)"),
            "{detail}"
        );
    }

    #[test]
    fn terminal_escapes_from_agents_are_printed_inert() {
        assert_eq!(inert("ok\u{1b}[2Jgone\r"), "ok\\u{1b}[2Jgone\\r");
        assert_eq!(inert("plain"), "plain");
    }

    #[test]
    fn bidi_overrides_from_agents_are_printed_inert() {
        assert_eq!(
            inert("title \u{202E}exe.txt\u{2066}x"),
            "title \\u{202e}exe.txt\\u{2066}x"
        );
        assert_eq!(inert("שלום"), "שלום", "right-to-left text itself stays");
    }

    #[test]
    fn a_merge_review_names_the_files_other_tools_run_inert() {
        use overseer_core::autorun::{AutoRunFile, PathChange};
        use overseer_core::{GateBody, MergeReviewGate};
        // Any gate, made a merge review naming one file.
        let mut g = crate::inbox::tests::question_gate();
        g.body = GateBody::MergeReview(MergeReviewGate {
            auto_run: vec![AutoRunFile {
                path: "sub/\u{202E}.envrc".into(),
                change: PathChange::Added,
                runs: "direnv: shell code".into(),
            }],
        });
        let out = gate_detail(&g);
        assert!(
            out.contains("  AUTO-RUN sub/\\u{202e}.envrc: direnv: shell code\n"),
            "{out}"
        );
    }

    /// `overseer runs why` names each rule with the layer it came from;
    /// a decision recorded before layers were typed shows its rule alone.
    #[test]
    fn a_rules_decision_shows_its_rule_with_its_layer() {
        use overseer_core::rules::{Provenance, RuleLayer, RuleProvenance};
        let compound = Provenance(vec![
            RuleProvenance {
                layer: RuleLayer::Task,
                rule: "Bash(cargo test:*)".into(),
            },
            RuleProvenance {
                layer: RuleLayer::Workspace,
                rule: "Bash(tail:*)".into(),
            },
        ]);
        assert_eq!(
            rule_shown(Some("Bash(cargo test:*) + Bash(tail:*)"), Some(&compound)).as_deref(),
            Some("Bash(cargo test:*) + Bash(tail:*) (task rule + workspace rule)")
        );
        let run = Provenance::one(RuleLayer::Run, "Bash(make \u{1b}[2J)");
        assert_eq!(
            rule_shown(Some("x"), Some(&run)).as_deref(),
            Some("Bash(make \\u{1b}[2J) (this run's rule, from an “always” answer)")
        );
        // An old record: its rule, as it was recorded.
        assert_eq!(
            rule_shown(Some("Edit(src/**)"), None).as_deref(),
            Some("Edit(src/**)")
        );
        assert_eq!(rule_shown(None, None), None);
    }

    #[test]
    fn ages_read_like_a_person_would_say_them() {
        assert_eq!(age(0, 59_000), "59s");
        assert_eq!(age(0, 61_000), "1m");
        assert_eq!(age(0, 7_200_000), "2h");
        assert_eq!(age(0, 3 * 86_400_000), "3d");
        assert_eq!(age(10, 0), "0s");
    }
}
