//! [`Checkpoint`]: a model's weights in safetensors files on disk, one file or the shards a
//! `model.safetensors.index.json` lists, read a tensor at a time (a file's header is read when
//! it is opened, each tensor's bytes when the model asks for it), so loading holds one tensor
//! in host memory, not the file.

use crate::safetensors_io::float_values;
use crate::weights::check_shape;
use crate::{ModelError, WeightSource};
use safetensors::tensor::Metadata;
use serde::Deserialize;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The weights file of an unsharded model directory.
const SINGLE: &str = "model.safetensors";
/// The index of a sharded one: which file holds each tensor.
const INDEX: &str = "model.safetensors.index.json";

/// The longest header the format allows (as the `safetensors` crate reads it).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// One safetensors file: its header parsed and checked against the file's length.
struct Shard {
    path: PathBuf,
    /// Read at offsets (no cursor), so that threads read their tensors at once.
    file: File,
    /// Where the tensors' bytes start: after the 8-byte length and the header.
    data_start: u64,
    metadata: Metadata,
}

/// The part of `model.safetensors.index.json` that says where each tensor is.
#[derive(Deserialize)]
struct Index {
    weight_map: HashMap<String, String>,
}

/// A model's weights on disk, as a [`WeightSource`]: a safetensors file, or a model directory
/// holding `model.safetensors` or the shards `model.safetensors.index.json` lists.
pub struct Checkpoint {
    shards: Vec<Shard>,
    /// Which shard holds each tensor (every tensor of the only shard where there is no index).
    holder: HashMap<String, usize>,
}

impl Checkpoint {
    /// The weights at `path`: a safetensors file, or a directory with `model.safetensors` or
    /// `model.safetensors.index.json` and its shards. Every file is opened and its header
    /// checked now ([`ModelError::Read`] naming a file that can't be read,
    /// [`ModelError::Corrupt`] one that is not a whole safetensors file, [`ModelError::Index`]
    /// an index that is not JSON or names a file outside the directory).
    pub fn open(path: &Path) -> Result<Checkpoint, ModelError> {
        if !path.is_dir() {
            return Checkpoint::single(path);
        }
        let index = path.join(INDEX);
        if index.exists() {
            return Checkpoint::sharded(path, &index);
        }
        let single = path.join(SINGLE);
        if single.exists() {
            return Checkpoint::single(&single);
        }
        Err(ModelError::Index(format!(
            "{} holds neither {SINGLE} nor {INDEX}",
            path.display()
        )))
    }

    /// The names of the tensors the checkpoint holds, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.holder.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    fn single(path: &Path) -> Result<Checkpoint, ModelError> {
        let shard = Shard::open(path)?;
        let holder = shard
            .metadata
            .tensors()
            .into_keys()
            .map(|name| (name, 0))
            .collect();
        Ok(Checkpoint {
            shards: vec![shard],
            holder,
        })
    }

    fn sharded(dir: &Path, index: &Path) -> Result<Checkpoint, ModelError> {
        let text = std::fs::read_to_string(index).map_err(|source| ModelError::Read {
            path: index.to_path_buf(),
            source,
        })?;
        let bad = |why: String| ModelError::Index(format!("{}: {why}", index.display()));
        let map = serde_json::from_str::<Index>(&text)
            .map_err(|e| bad(e.to_string()))?
            .weight_map;
        let mut shards = Vec::new();
        let mut opened: HashMap<&str, usize> = HashMap::new();
        let mut holder = HashMap::new();
        for (name, file) in &map {
            let at = match opened.get(file.as_str()) {
                Some(&at) => at,
                None => {
                    if !is_plain_name(file) {
                        return Err(bad(format!(
                            "`{name}` is in `{file}`, which is not a file of this directory"
                        )));
                    }
                    shards.push(Shard::open(&dir.join(file))?);
                    opened.insert(file, shards.len() - 1);
                    shards.len() - 1
                }
            };
            holder.insert(name.clone(), at);
        }
        Ok(Checkpoint { shards, holder })
    }
}

/// A file name with no directory part: the only kind of shard name an index may hold.
fn is_plain_name(file: &str) -> bool {
    let path = Path::new(file);
    path.components().count() == 1 && path.file_name().is_some_and(|f| f == file)
}

impl Shard {
    fn open(path: &Path) -> Result<Shard, ModelError> {
        let read_error = |source| ModelError::Read {
            path: path.to_path_buf(),
            source,
        };
        let corrupt = |why: &str| ModelError::Corrupt(format!("{}: {why}", path.display()));
        let mut file = File::open(path).map_err(read_error)?;
        let length = file.metadata().map_err(read_error)?.len();
        let mut n = [0u8; 8];
        file.read_exact(&mut n)
            .map_err(|_| corrupt("shorter than a header's length"))?;
        let header_len = u64::from_le_bytes(n);
        if header_len > (length - 8).min(MAX_HEADER_BYTES) {
            return Err(corrupt(&format!(
                "its header's length, {header_len} bytes, is past its end or the format's limit"
            )));
        }
        let mut header = vec![0u8; header_len as usize];
        file.read_exact(&mut header).map_err(read_error)?;
        let metadata: Metadata =
            serde_json::from_slice(&header).map_err(|e| corrupt(&e.to_string()))?;
        let data_start = 8 + header_len;
        if data_start + metadata.data_len() as u64 != length {
            return Err(corrupt(&format!(
                "its tensors take {} bytes, its data {}",
                metadata.data_len(),
                length - data_start
            )));
        }
        Ok(Shard {
            path: path.to_path_buf(),
            file,
            data_start,
            metadata,
        })
    }

    /// The bytes from `start` to `end` of the tensors' data (a tensor's offsets, which `open`
    /// checked to lie within the file).
    ///
    /// A large tensor is read in parts of [`READ_PART`] bytes on threads: one thread copies
    /// out of the page cache, and faults in the buffer, at a fraction of what memory allows.
    fn bytes(&self, start: usize, end: usize) -> Result<Vec<u8>, ModelError> {
        let mut bytes = vec![0u8; end - start];
        let at = self.data_start + start as u64;
        let read = |(i, part): (usize, &mut [u8])| {
            read_exact_at(&self.file, part, at + (i * READ_PART) as u64)
        };
        let mut parts = bytes.chunks_mut(READ_PART).enumerate();
        let first = parts.next();
        let done = std::thread::scope(|s| {
            let others: Vec<_> = parts.map(|part| s.spawn(move || read(part))).collect();
            let first = first.map_or(Ok(()), read);
            others
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .fold(first, Result::and)
        });
        done.map_err(|source| ModelError::Read {
            path: self.path.clone(),
            source,
        })?;
        Ok(bytes)
    }
}

/// Bytes a thread reads of a large tensor.
const READ_PART: usize = 8 << 20;

/// Fills `buf` from `file` at `offset`, leaving no cursor moved that another thread's read
/// depends on.
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Fills `buf` from `file` at `offset` (Windows' positional reads, which may return short).
#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

impl WeightSource for Checkpoint {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let missing = || ModelError::MissingTensor { name: name.into() };
        let shard = &self.shards[*self.holder.get(name).ok_or_else(missing)?];
        let info = shard.metadata.info(name).ok_or_else(missing)?;
        check_shape(name, &info.shape, shape)?;
        let (start, end) = info.data_offsets;
        float_values(name, info.dtype, &shard.bytes(start, end)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::{tensor::TensorView, Dtype};
    use vkprism::TensorFormat;

    /// Tensors of every float type, short and long (read in parts on threads), read back as
    /// each stored value converts alone.
    #[test]
    fn tensors_read_back_as_each_value_converts() {
        // The longest crosses the parts a large tensor is read in on threads.
        let lengths = [5, 12_295, 4_200_007];
        let stored = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 7919) % 4001) as f32 * 0.173 - 346.0)
                .collect()
        };
        let mut files = Vec::new();
        for (dtype, format) in [
            (Dtype::F32, TensorFormat::F32),
            (Dtype::F16, TensorFormat::F16),
            (Dtype::BF16, TensorFormat::Bf16),
        ] {
            for n in lengths {
                let bytes = vkprism::encode_f32(format, &stored(n)).unwrap();
                files.push((format!("{dtype:?}_{n}"), dtype, n, bytes));
            }
        }
        let views = files.iter().map(|(name, dtype, n, bytes)| {
            (
                name.clone(),
                TensorView::new(*dtype, vec![*n], bytes).unwrap(),
            )
        });
        let path =
            std::env::temp_dir().join(format!("vkprism-checkpoint-{}.st", std::process::id()));
        safetensors::serialize_to_file(views, None, &path).unwrap();
        let checkpoint = Checkpoint::open(&path).unwrap();
        for (name, dtype, n, bytes) in &files {
            let got = checkpoint.tensor(name, &[*n]).unwrap();
            let want: Vec<f32> = match dtype {
                Dtype::F32 => bytes
                    .chunks(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::F16 => bytes
                    .chunks(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                _ => bytes
                    .chunks(2)
                    .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
            };
            assert!(got == want, "{name}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
