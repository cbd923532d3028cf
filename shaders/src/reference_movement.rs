//! CPU references for the data-movement and conversion kernels (re-exported by
//! [`crate::reference`]): each computed element by element from coordinates, independently of
//! the kernels' strides.

/// The coordinates of row-major element `i` of `shape`.
fn coords(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = i % shape[d];
        i /= shape[d];
    }
    c
}

/// The row-major index of coordinates `c` in `shape`.
fn index(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(shape).fold(0, |acc, (&c, &n)| acc * n + c)
}

/// `x` (of `shape`) with its dimensions reordered: output dimension d is input dimension
/// `perm[d]`. Returns the values and the output's shape.
pub fn permute(x: &[f32], shape: &[usize], perm: &[usize]) -> (Vec<f32>, Vec<usize>) {
    let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let n = out.iter().product();
    let values = (0..n)
        .map(|i| {
            let c = coords(i, &out);
            let mut src = vec![0; shape.len()];
            for (d, &p) in perm.iter().enumerate() {
                src[p] = c[d];
            }
            x[index(&src, shape)]
        })
        .collect();
    (values, out)
}

/// The block `starts[d] .. ends[d]` of `x` (of `shape`), row-major.
pub fn slice(x: &[f32], shape: &[usize], starts: &[usize], ends: &[usize]) -> Vec<f32> {
    let out: Vec<usize> = starts.iter().zip(ends).map(|(s, e)| e - s).collect();
    (0..out.iter().product())
        .map(|i| {
            let c: Vec<usize> = coords(i, &out)
                .iter()
                .zip(starts)
                .map(|(c, s)| c + s)
                .collect();
            x[index(&c, shape)]
        })
        .collect()
}

/// The tensors `inputs` (values, shape) joined along `axis`.
pub fn concat(inputs: &[(&[f32], &[usize])], axis: usize) -> Vec<f32> {
    let mut out = inputs[0].1.to_vec();
    out[axis] = inputs.iter().map(|(_, s)| s[axis]).sum();
    (0..out.iter().product())
        .map(|i| {
            let mut c = coords(i, &out);
            for (x, shape) in inputs {
                if c[axis] < shape[axis] {
                    return x[index(&c, shape)];
                }
                c[axis] -= shape[axis];
            }
            unreachable!("a coordinate within the joined axis")
        })
        .collect()
}

/// `x` (of `shape`) with `before[d]` and `after[d]` values of `value` added along each
/// dimension d.
pub fn pad(x: &[f32], shape: &[usize], before: &[usize], after: &[usize], value: f32) -> Vec<f32> {
    let out: Vec<usize> = (0..shape.len())
        .map(|d| before[d] + shape[d] + after[d])
        .collect();
    (0..out.iter().product())
        .map(|i| {
            let c = coords(i, &out);
            let inside = (0..shape.len()).all(|d| c[d] >= before[d] && c[d] - before[d] < shape[d]);
            if !inside {
                return value;
            }
            let src: Vec<usize> = c.iter().zip(before).map(|(c, b)| c - b).collect();
            x[index(&src, shape)]
        })
        .collect()
}

/// Rows `ids` of a table of rows of `dim` values; an id outside the table gives zeros.
pub fn embedding(table: &[f32], dim: usize, ids: &[i32]) -> Vec<f32> {
    let vocab = table.len() / dim;
    ids.iter()
        .flat_map(|&id| match usize::try_from(id) {
            Ok(r) if r < vocab => table[r * dim..(r + 1) * dim].to_vec(),
            _ => vec![0.0; dim],
        })
        .collect()
}

/// The scale of element `i` of a tensor viewed as `[outer, scales.len(), inner]` (one scale:
/// every element's).
fn scale_at(scales: &[f32], inner: usize, i: usize) -> f32 {
    scales[(i / inner.max(1)) % scales.len()]
}

/// `x / s` in f64, the quotient the int8 quantization rounds.
pub fn quotient(x: f32, s: f32) -> f64 {
    f64::from(x) / f64::from(s)
}

/// Symmetric int8 quantization: `clamp(round_half_even(x / s), -127, 127)`, the quotient in
/// f64; `s` per element from `scales` along a tensor viewed as `[outer, scales.len(), inner]`.
pub fn quantize(x: &[f32], scales: &[f32], inner: usize) -> Vec<i8> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let q = quotient(v, scale_at(scales, inner, i)).round_ties_even();
            q.clamp(-127.0, 127.0) as i8
        })
        .collect()
}

/// `q · s` in f32 (one rounding), `s` as in [`quantize`].
pub fn dequantize(q: &[i8], scales: &[f32], inner: usize) -> Vec<f32> {
    q.iter()
        .enumerate()
        .map(|(i, &v)| (f64::from(v) * f64::from(scale_at(scales, inner, i))) as f32)
        .collect()
}
