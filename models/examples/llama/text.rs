//! Text in and out of the decoder: a prompt encoded with the model's `tokenizer.json` (its
//! special tokens added, as `transformers` encodes a prompt), the generated tokens decoded as
//! they come, and generation ending at the first special token the model produces (`</s>`).

use std::collections::HashSet;
use std::error::Error;
use std::io::Write;
use std::path::Path;
use tokenizers::Tokenizer;
use vkprism_models::{Llama, Sampler};

/// A tokenizer and the tokens that end a generation.
pub struct Text {
    tokenizer: Tokenizer,
    /// Its special tokens (`<s>`, `</s>`, `<unk>`, ...): none belongs in generated text.
    stops: HashSet<u32>,
}

impl Text {
    /// The tokenizer in `path` (a Hugging Face `tokenizer.json`).
    pub fn open(path: &Path) -> Result<Text, Box<dyn Error>> {
        let tokenizer =
            Tokenizer::from_file(path).map_err(|e| format!("tokenizer {}: {e}", path.display()))?;
        let stops = tokenizer
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, _)| id)
            .collect();
        Ok(Text { tokenizer, stops })
    }

    /// `text` as the model's tokens, with `special` the special tokens the tokenizer adds to a
    /// prompt (`<s>`; a chat template writes its own).
    pub fn encode(&self, text: &str, special: bool) -> Result<Vec<u32>, Box<dyn Error>> {
        let encoding = self
            .tokenizer
            .encode(text, special)
            .map_err(|e| format!("encoding the prompt: {e}"))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// `tokens` as text, special tokens left out.
    pub fn decode(&self, tokens: &[u32]) -> Result<String, Box<dyn Error>> {
        let text = self.tokenizer.decode(tokens, true);
        Ok(text.map_err(|e| format!("decoding tokens: {e}"))?)
    }

    /// Up to `n` tokens generated after `prompt`, each drawn by `sampler`; the prompt's text
    /// and theirs written to `out` as it becomes final (which may be a few tokens later: see
    /// [`Stream`]). Ends early at a special token (returned last, not written).
    pub fn generate(
        &self,
        model: &mut Llama,
        prompt: &[u32],
        n: usize,
        sampler: &mut Sampler,
        out: &mut dyn Write,
    ) -> Result<Vec<u32>, Box<dyn Error>> {
        let mut stream = Stream::of(self, prompt);
        write!(out, "{}", stream.ready(false)?)?;
        let mut tokens = Vec::with_capacity(n);
        let stops: Vec<u32> = self.stops.iter().copied().collect();
        for generated in model.generation(prompt, n, sampler, &stops)? {
            let token = generated?.token;
            tokens.push(token);
            if self.stops.contains(&token) {
                break;
            }
            write!(out, "{}", stream.step(token)?)?;
            out.flush()?;
        }
        write!(out, "{}", stream.step_end()?)?;
        Ok(tokens)
    }
}

/// Generated text as it becomes final. The sequence is decoded at each step up to its trailing
/// run of byte tokens (`<0x..>`, Llama 2's byte fallback: a run is decoded whole, and a byte
/// still to come can turn the run's earlier characters into U+FFFD), less a trailing U+FFFD (a
/// byte-level tokenizer's character whose bytes are still coming), and what extends the text
/// written so far is written. (`tokenizers`' own `DecodeStream` refuses a sequence whose bytes
/// are not UTF-8, which a model can produce.)
struct Stream<'a> {
    text: &'a Text,
    tokens: Vec<u32>,
    written: String,
}

impl<'a> Stream<'a> {
    /// A stream of `prompt` and what follows it, nothing written yet.
    fn of(text: &'a Text, prompt: &[u32]) -> Stream<'a> {
        Stream {
            text,
            tokens: prompt.to_vec(),
            written: String::new(),
        }
    }

    /// The text `token` makes final.
    fn step(&mut self, token: u32) -> Result<String, Box<dyn Error>> {
        self.tokens.push(token);
        self.ready(false)
    }

    /// The byte-fallback tokens (`<0x..>`) the sequence ends in.
    fn trailing_bytes(&self) -> usize {
        let tokenizer = &self.text.tokenizer;
        let is_byte = |id: &&u32| {
            tokenizer
                .id_to_token(**id)
                .is_some_and(|t| t.len() == 6 && t.starts_with("<0x") && t.ends_with('>'))
        };
        self.tokens.iter().rev().take_while(is_byte).count()
    }

    /// The text held back for bytes that never came.
    fn step_end(&mut self) -> Result<String, Box<dyn Error>> {
        self.ready(true)
    }

    /// The text newly final (all of it at the sequence's `end`).
    fn ready(&mut self, end: bool) -> Result<String, Box<dyn Error>> {
        let settled = match end {
            true => self.tokens.len(),
            false => self.tokens.len() - self.trailing_bytes(),
        };
        let whole = self.text.decode(&self.tokens[..settled])?;
        let ready = if end {
            &whole[..]
        } else {
            whole.trim_end_matches('\u{FFFD}')
        };
        let Some(new) = ready.strip_prefix(self.written.as_str()) else {
            return Ok(String::new());
        };
        let new = new.to_string();
        self.written = ready.to_string();
        Ok(new)
    }
}
