//! Dynamic int8 quantization of activations ([`quantize_rows`]), the first half of the int8
//! GEMM with float inputs and outputs ([`Ops::gemm_int8_weights`](crate::Ops::gemm_int8_weights));
//! [`gemm_int8_dequant`](crate::gemm_int8_dequant) is the second.

vkprism::compute_shader! {
    /// Each row of x (`[rows, cols]`, cols a multiple of 4) quantized to int8 with its own
    /// scale: `s = max |x| / 127` (1 for a row of zeros) into `scale` (F32 `[rows]`),
    /// `y = clamp(roundEven(x / s), -127, 127)`. One workgroup per row
    /// ([`quantize_rows_grid`]); push constants `rows`, `cols`.
    pub mod quantize_rows,
    path: "quantize_rows.comp",
}

/// [`quantize_rows`]'s invocation grid for workgroups of `local` invocations: one per row,
/// rows over y and z.
pub fn quantize_rows_grid(local: u32, rows: usize) -> [u32; 3] {
    crate::rows::rows_grid(local, rows)
}
