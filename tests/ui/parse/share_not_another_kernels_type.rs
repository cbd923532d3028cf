// `share` names another kernel of the invocation and one of its constants types.
vkprism::compute_shader! {
    pub mod ops,
    shaders: {
        a: { src: "#version 450\nvoid main() {}" },
        b: { src: "#version 450\nvoid main() {}", share: [nope::SpecConstants] },
        c: { src: "#version 450\nvoid main() {}", share: [a::BufferBindings] },
        d: { src: "#version 450\nvoid main() {}", share: [SpecConstants] },
        e: { src: "#version 450\nvoid main() {}", share: [e::PushConstants] },
    },
}

vkprism::compute_shader! {
    pub mod alone,
    src: "#version 450\nvoid main() {}",
    share: [a::SpecConstants],
}

fn main() {}
