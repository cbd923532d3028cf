// Specialization-constant ids 236 to 250 are the device facts' (`ncnn_subgroupSize`, ...): the
// runtime would overwrite a kernel's own constant there with a fact about the device.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (constant_id = 240) const int tile = 4;
layout (binding = 0) buffer a_blob { float a[]; };
void main() {
    a[0] = float(tile);
}
"#,
}

fn main() {}
