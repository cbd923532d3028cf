//! A chat model's prompt: a user's message (after an optional system message) laid out by the
//! model's own chat template, as `transformers`' `apply_chat_template` renders it with
//! `add_generation_prompt`: the Jinja source from the model directory's `chat_template.jinja`
//! or its `tokenizer_config.json`'s `chat_template`, rendered by minijinja with Python's string
//! methods and the functions `transformers` gives templates: `raise_exception` and
//! `strftime_now` (Llama 3.x date their system message with it).

use minijinja::{context, Environment, Error as JinjaError, ErrorKind};
use std::error::Error;
use std::fmt::Write;
use std::path::Path;

/// A chat template and the special tokens it may name.
pub struct ChatTemplate {
    source: String,
    bos: String,
    eos: String,
}

/// A special token in `tokenizer_config.json`: a string, or an added token's `content`.
fn token_text(value: Option<&serde_json::Value>) -> String {
    match value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v["content"].as_str().unwrap_or_default().to_string(),
        None => String::new(),
    }
}

/// The default template of a `chat_template` field: the string, or the list entry named
/// `default` (the first where none is).
fn template_of(value: &serde_json::Value) -> Option<String> {
    if let Some(s) = value.as_str() {
        return Some(s.to_string());
    }
    let list = value.as_array()?;
    let named = |e: &&serde_json::Value| e["name"] == "default";
    let entry = list.iter().find(named).or(list.first())?;
    entry["template"].as_str().map(String::from)
}

impl ChatTemplate {
    /// The chat template of the model directory `dir`.
    pub fn open(dir: &Path) -> Result<ChatTemplate, Box<dyn Error>> {
        let config_path = dir.join("tokenizer_config.json");
        let config: serde_json::Value = match std::fs::read_to_string(&config_path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{}: {e}", config_path.display()))?,
            Err(_) => serde_json::Value::Null,
        };
        let jinja = dir.join("chat_template.jinja");
        let source = match std::fs::read_to_string(&jinja) {
            Ok(source) => source,
            Err(_) => template_of(&config["chat_template"]).ok_or_else(|| {
                format!(
                    "{} has no chat template (neither {} nor a `chat_template` in {})",
                    dir.display(),
                    jinja.display(),
                    config_path.display()
                )
            })?,
        };
        Ok(ChatTemplate {
            source,
            bos: token_text(config.get("bos_token")),
            eos: token_text(config.get("eos_token")),
        })
    }

    /// The prompt for `user`'s message after `system`'s, the assistant's turn opened.
    pub fn render(&self, system: Option<&str>, user: &str) -> Result<String, Box<dyn Error>> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |message: String| -> Result<String, _> {
            Err(JinjaError::new(ErrorKind::InvalidOperation, message))
        });
        env.add_function("strftime_now", strftime_now);
        env.add_template("chat", &self.source)
            .map_err(|e| format!("chat template: {e}"))?;
        let mut messages = Vec::new();
        if let Some(system) = system {
            messages.push(context! { role => "system", content => system });
        }
        messages.push(context! { role => "user", content => user });
        let rendered = env.get_template("chat")?.render(context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => self.bos,
            eos_token => self.eos,
        });
        Ok(rendered.map_err(|e| format!("chat template: {e}"))?)
    }
}

/// The local time now in `format` (Python's `strftime` directives), as `transformers`'
/// `strftime_now`; a directive chrono does not know is an error, not a panic.
fn strftime_now(format: String) -> Result<String, JinjaError> {
    let mut out = String::new();
    write!(out, "{}", chrono::Local::now().format(&format)).map_err(|_| {
        JinjaError::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: `{format}` is not a strftime format"),
        )
    })?;
    Ok(out)
}
