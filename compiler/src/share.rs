//! `share`: kernels of one invocation using one generated type. A kernel compiled from the same
//! source with other defines (or from sources with one interface) names the kernel whose
//! `SpecConstants` or `PushConstants` it uses (`share: [gemm::SpecConstants]`); its module then
//! re-exports that kernel's type instead of generating its own, so one value serves both and no
//! glue copies fields between them. The layouts must be identical (names, ids or offsets,
//! types, defaults); a difference is an error naming both kernels and the field.
//!
//! Bindings structs are not shared: each names its kernel (`Bindings::Kernel`), which is how a
//! dispatch checks at compile time that the bindings are the pipeline's.

use crate::ast::Item;
use crate::ctxt::Ctxt;
use crate::model::KernelModel;
use crate::reflect::{PushBlock, SpecConstant};
use proc_macro2::{Ident, Span};

/// A generated type one kernel can take from another.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SharedType {
    /// `SpecConstants`.
    Spec,
    /// `PushConstants`.
    Push,
}

impl SharedType {
    fn of(name: &str) -> Option<SharedType> {
        match name {
            "SpecConstants" => Some(SharedType::Spec),
            "PushConstants" => Some(SharedType::Push),
            _ => None,
        }
    }

    /// The generated type's name.
    pub fn name(self) -> &'static str {
        match self {
            SharedType::Spec => "SpecConstants",
            SharedType::Push => "PushConstants",
        }
    }
}

/// One entry of `share`: `kernel::Type`.
#[derive(Clone, Debug)]
pub struct ShareSpec {
    /// The kernel whose type is used.
    pub owner: Ident,
    /// Which type.
    pub ty: SharedType,
    /// The entry, for errors.
    pub span: Span,
}

/// `share: [kernel::Type, ...]` checked for its shape: two-segment paths naming a type that can
/// be shared, each type once.
pub fn share_list(cx: &Ctxt, items: Vec<Item>) -> Vec<ShareSpec> {
    let mut shares: Vec<ShareSpec> = Vec::new();
    for item in items {
        let span = item.span();
        let Item::Path(path) = item else {
            cx.error(
                span,
                "`share` lists another kernel's types as paths, e.g. `[gemm::SpecConstants]`",
            );
            continue;
        };
        let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
        let plain = path.leading_colon.is_none()
            && segments.iter().all(|s| s.arguments.is_none())
            && segments.len() == 2;
        if !plain {
            cx.error(
                span,
                "`share` names a kernel of this invocation and one of its types: `kernel::SpecConstants` or `kernel::PushConstants`",
            );
            continue;
        }
        let type_name = segments[1].ident.to_string();
        let Some(ty) = SharedType::of(&type_name) else {
            let why = if type_name.ends_with("Bindings") {
                ": a bindings struct names its kernel, which is how a dispatch checks that the bindings are its pipeline's"
            } else {
                ""
            };
            cx.error(
                segments[1].ident.span(),
                format!("`{type_name}` can't be shared; `share` takes `SpecConstants` and `PushConstants`{why}"),
            );
            continue;
        };
        if shares.iter().any(|s| s.ty == ty) {
            cx.error(
                span,
                format!(
                    "`{}` is shared twice: a kernel takes each type from one kernel",
                    ty.name()
                ),
            );
            continue;
        }
        shares.push(ShareSpec {
            owner: segments[0].ident.clone(),
            ty,
            span,
        });
    }
    shares
}

/// Where one kernel's shared types come from, once checked: the owner's module name per type.
#[derive(Clone, Debug, Default)]
pub struct Shared {
    /// `SpecConstants` is this kernel's (re-exported).
    pub spec: Option<Ident>,
    /// `PushConstants` is this kernel's (re-exported).
    pub push: Option<Ident>,
    /// Kernels that use this kernel's `SpecConstants`, for its docs.
    pub spec_users: Vec<String>,
    /// Kernels that use this kernel's `PushConstants`, for its docs.
    pub push_users: Vec<String>,
}

/// One kernel as `resolve` sees it: its name, its `share` entries, and its model if it built.
pub struct Member<'a> {
    /// The kernel's module name.
    pub name: &'a Ident,
    /// Its `share` entries.
    pub shares: &'a [ShareSpec],
    /// Its model; `None` when it failed.
    pub model: Option<&'a KernelModel>,
}

/// Checks every kernel's `share` entries against the others and returns, per kernel (in order),
/// where its types come from. An entry whose owner failed to build is dropped silently (the
/// kernel keeps its own type; the owner's errors say why); every other problem is an error in
/// `cx` at the entry, and the kernel keeps its own type.
pub fn resolve(cx: &Ctxt, kernels: &[Member<'_>]) -> Vec<Shared> {
    let mut shared = vec![Shared::default(); kernels.len()];
    for (i, user) in kernels.iter().enumerate() {
        for share in user.shares {
            let Some(owner_index) = owner(cx, kernels, i, share) else {
                continue;
            };
            let owner = &kernels[owner_index];
            let (Some(owned), Some(used)) = (owner.model, user.model) else {
                continue;
            };
            let difference = match share.ty {
                SharedType::Spec => spec_difference(&owned.spec, &used.spec),
                SharedType::Push => push_difference(owned.push.as_ref(), used.push.as_ref()),
            };
            if let Some(d) = difference {
                cx.error(
                    share.span,
                    format!(
                        "`{user}` can't use `{owner}::{ty}`: {}",
                        d.say(&owner.name.to_string(), &user.name.to_string()),
                        user = user.name,
                        owner = owner.name,
                        ty = share.ty.name(),
                    ),
                );
                continue;
            }
            let user_name = user.name.to_string();
            match share.ty {
                SharedType::Spec => {
                    shared[i].spec = Some(owner.name.clone());
                    shared[owner_index].spec_users.push(user_name);
                }
                SharedType::Push => {
                    shared[i].push = Some(owner.name.clone());
                    shared[owner_index].push_users.push(user_name);
                }
            }
        }
    }
    shared
}

/// The index of the kernel `share` names, if it is another kernel of the invocation that owns
/// the type (does not itself share it); else an error.
fn owner(cx: &Ctxt, kernels: &[Member<'_>], user: usize, share: &ShareSpec) -> Option<usize> {
    let names = || {
        kernels
            .iter()
            .map(|k| format!("`{}`", k.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(index) = kernels.iter().position(|k| *k.name == share.owner) else {
        cx.error(
            share.owner.span(),
            format!(
                "no kernel `{}` in this invocation; `share` names one of: {}",
                share.owner,
                names()
            ),
        );
        return None;
    };
    if index == user {
        cx.error(
            share.owner.span(),
            format!(
                "`{}` can't share its own `{}`",
                share.owner,
                share.ty.name()
            ),
        );
        return None;
    }
    if let Some(next) = kernels[index].shares.iter().find(|s| s.ty == share.ty) {
        cx.error(
            share.owner.span(),
            format!(
                "`{}` uses `{}::{ty}` itself: name the kernel that owns it, `{}::{ty}`",
                share.owner,
                next.owner,
                next.owner,
                ty = share.ty.name()
            ),
        );
        return None;
    }
    Some(index)
}

/// The first way two layouts differ, in words that fill "`user` can't use `owner::T`: ...".
#[derive(Debug, PartialEq)]
enum Difference {
    /// A field only one kernel has.
    OnlyIn { field: String, owner_has: bool },
    /// A field both have, differing in `what` (its id, offset, type, default or size).
    Field {
        field: String,
        what: &'static str,
        owner: String,
        user: String,
    },
    /// One kernel has no push-constant block.
    NoBlock { owner_has: bool },
    /// The blocks' sizes differ.
    Size { owner: u32, user: u32 },
}

impl Difference {
    fn say(&self, owner: &str, user: &str) -> String {
        match self {
            Difference::OnlyIn { field, owner_has } => {
                let (has, lacks) = if *owner_has {
                    (owner, user)
                } else {
                    (user, owner)
                };
                format!("`{field}` is declared in `{has}`, not in `{lacks}`")
            }
            Difference::Field {
                field,
                what,
                owner: o,
                user: u,
            } => format!("`{field}` has {what} {o} in `{owner}` but {u} in `{user}`"),
            Difference::NoBlock { owner_has } => {
                let (has, lacks) = if *owner_has {
                    (owner, user)
                } else {
                    (user, owner)
                };
                format!("`{has}` has a push-constant block and `{lacks}` has none")
            }
            Difference::Size { owner: o, user: u } => {
                format!("the push-constant block is {o} bytes in `{owner}` but {u} in `{user}`")
            }
        }
    }
}

/// How two kernels' specialization constants differ, if they do.
fn spec_difference(owner: &[SpecConstant], user: &[SpecConstant]) -> Option<Difference> {
    for o in owner {
        let Some(u) = user.iter().find(|u| u.name == o.name) else {
            return Some(Difference::OnlyIn {
                field: o.name.clone(),
                owner_has: true,
            });
        };
        let field = |what, a: String, b: String| Difference::Field {
            field: o.name.clone(),
            what,
            owner: a,
            user: b,
        };
        if o.id != u.id {
            return Some(field("constant_id", o.id.to_string(), u.id.to_string()));
        }
        if o.scalar != u.scalar {
            return Some(field(
                "type",
                format!("{:?}", o.scalar),
                format!("{:?}", u.scalar),
            ));
        }
        if o.default_bits != u.default_bits {
            return Some(field("default", shown_default(o), shown_default(u)));
        }
    }
    let extra = user
        .iter()
        .find(|u| !owner.iter().any(|o| o.name == u.name))?;
    Some(Difference::OnlyIn {
        field: extra.name.clone(),
        owner_has: false,
    })
}

/// A constant's default as the generated docs show it.
fn shown_default(s: &SpecConstant) -> String {
    match s.scalar {
        vkprism_core::ScalarKind::F32 => f32::from_bits(s.default_bits).to_string(),
        vkprism_core::ScalarKind::I32 => (s.default_bits as i32).to_string(),
        vkprism_core::ScalarKind::Bool => (s.default_bits != 0).to_string(),
        _ => s.default_bits.to_string(),
    }
}

/// How two kernels' push-constant blocks differ, if they do.
fn push_difference(owner: Option<&PushBlock>, user: Option<&PushBlock>) -> Option<Difference> {
    let (o, u) = match (owner, user) {
        (None, None) => return None,
        (Some(_), None) => return Some(Difference::NoBlock { owner_has: true }),
        (None, Some(_)) => return Some(Difference::NoBlock { owner_has: false }),
        (Some(o), Some(u)) => (o, u),
    };
    for om in &o.members {
        let Some(um) = u.members.iter().find(|m| m.name == om.name) else {
            return Some(Difference::OnlyIn {
                field: om.name.clone(),
                owner_has: true,
            });
        };
        let field = |what, a: String, b: String| Difference::Field {
            field: om.name.clone(),
            what,
            owner: a,
            user: b,
        };
        if om.offset != um.offset {
            return Some(field(
                "offset",
                om.offset.to_string(),
                um.offset.to_string(),
            ));
        }
        let ty = |m: &crate::reflect::PushMember| {
            format!(
                "{:?}x{}{}",
                m.scalar,
                m.components,
                m.array.map_or(String::new(), |n| format!("[{n}]"))
            )
        };
        if (om.scalar, om.components, om.array, om.size)
            != (um.scalar, um.components, um.array, um.size)
        {
            return Some(field("type", ty(om), ty(um)));
        }
    }
    if let Some(extra) = u
        .members
        .iter()
        .find(|m| !o.members.iter().any(|om| om.name == m.name))
    {
        return Some(Difference::OnlyIn {
            field: extra.name.clone(),
            owner_has: false,
        });
    }
    (o.size != u.size).then_some(Difference::Size {
        owner: o.size,
        user: u.size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkprism_core::ScalarKind;

    fn constant(id: u32, name: &str, default_bits: u32) -> SpecConstant {
        SpecConstant {
            id,
            name: name.into(),
            scalar: ScalarKind::I32,
            default_bits,
        }
    }

    #[test]
    fn identical_constants_share_and_each_difference_is_named() {
        let a = [constant(0, "BK", 16), constant(1, "split_k", 1)];
        assert_eq!(spec_difference(&a, &a), None);
        let missing = [constant(0, "BK", 16)];
        let d = spec_difference(&a, &missing).unwrap();
        assert_eq!(
            d.say("gemm", "gemm_split"),
            "`split_k` is declared in `gemm`, not in `gemm_split`"
        );
        let d = spec_difference(&missing, &a).unwrap();
        assert_eq!(
            d.say("gemm", "gemm_split"),
            "`split_k` is declared in `gemm_split`, not in `gemm`"
        );
        let moved = [constant(0, "BK", 16), constant(2, "split_k", 1)];
        let d = spec_difference(&a, &moved).unwrap();
        assert_eq!(
            d.say("a", "b"),
            "`split_k` has constant_id 1 in `a` but 2 in `b`"
        );
        let other_default = [constant(0, "BK", 64), constant(1, "split_k", 1)];
        let d = spec_difference(&a, &other_default).unwrap();
        assert_eq!(d.say("a", "b"), "`BK` has default 16 in `a` but 64 in `b`");
    }

    fn member(name: &str, offset: u32, scalar: ScalarKind) -> crate::reflect::PushMember {
        crate::reflect::PushMember {
            name: name.into(),
            offset,
            scalar,
            components: 1,
            array: None,
            size: 4,
        }
    }

    fn block(members: Vec<crate::reflect::PushMember>) -> PushBlock {
        let size = members.iter().map(|m| m.offset + m.size).max().unwrap_or(0);
        PushBlock {
            instance: "p".into(),
            size,
            members,
        }
    }

    #[test]
    fn push_blocks_compare_by_member_offset_type_and_size() {
        let a = block(vec![
            member("M", 0, ScalarKind::I32),
            member("alpha", 4, ScalarKind::F32),
        ]);
        assert_eq!(push_difference(Some(&a), Some(&a)), None);
        assert_eq!(push_difference(None, None), None);
        let d = push_difference(Some(&a), None).unwrap();
        assert_eq!(
            d.say("a", "b"),
            "`a` has a push-constant block and `b` has none"
        );
        let retyped = block(vec![
            member("M", 0, ScalarKind::I32),
            member("alpha", 4, ScalarKind::I32),
        ]);
        let d = push_difference(Some(&a), Some(&retyped)).unwrap();
        assert_eq!(
            d.say("a", "b"),
            "`alpha` has type F32x1 in `a` but I32x1 in `b`"
        );
        let longer = block(vec![
            member("M", 0, ScalarKind::I32),
            member("alpha", 4, ScalarKind::F32),
            member("h", 8, ScalarKind::I32),
        ]);
        let d = push_difference(Some(&a), Some(&longer)).unwrap();
        assert_eq!(d.say("a", "b"), "`h` is declared in `b`, not in `a`");
    }
}
