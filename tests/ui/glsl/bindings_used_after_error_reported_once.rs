// One GLSL error: the lines below, the usual calling code with the bindings struct and the push
// constants that the failed kernel never defined, add no error of their own.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_blob_data[]; };
layout (binding = 1) writeonly buffer b_blob { sfpvec4 b_blob_data[]; };
void main() {
    buffer_st4(b_blob_data, 0, buffer_ld4(a_blob_data, 0) + undefined_value);
}
"#,
}

#[allow(dead_code)]
fn bind_buffers<'a>(a: &'a vkprism::Tensor, b: &'a vkprism::Tensor) -> k::BufferBindings<'a> {
    k::BufferBindings { a_blob: a, b_blob: b }
}

#[allow(dead_code)]
fn bind_images<'a>(a: &'a vkprism::Image, b: &'a vkprism::Image) -> k::ImageBindings<'a> {
    k::ImageBindings { a_blob: a, b_blob: b }
}

#[allow(dead_code)]
fn run(list: &mut vkprism::CommandList, ctx: &vkprism::Context, a: &vkprism::Tensor, b: &vkprism::Tensor) {
    let kernel = ctx.load::<k::Kernel>().unwrap();
    let pipeline = kernel.pipeline(&k::SpecConstants::default(), None).unwrap();
    list.dispatch(&pipeline, &k::BufferBindings { a_blob: a, b_blob: b }, &k::PushConstants::default(), [64, 1, 1])
        .unwrap();
}

fn main() {}
