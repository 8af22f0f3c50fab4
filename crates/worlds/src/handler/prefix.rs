//! Where a process is in its handler run, interned: a deterministic handler's next call is a pure function of its
//! request and the answers its calls got (see `replay`), so each such prefix is run once, kept in a cache shared
//! by the explorer's threads, and a process's state holds a reference to it. Its identity (what states hash and
//! compare) is a 64-bit hash of its content, the same in every run and on every thread, so nothing explored or
//! printed depends on which thread first met a prefix. A hash that collides is detected on lookup and stops the
//! search.

use super::api::{Handler, Request};
use super::calls::{Answer, Call};
use super::replay::{next_step, Next};
use super::world::trace::Made;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};
use twox_hash::XxHash64;

/// A handler's request and the answers its calls got so far, with what it does next.
#[derive(Debug)]
pub struct Node {
    id: u64,
    /// The prefix one answer shorter (`None`: no call answered yet).
    parent: Option<u64>,
    request: Request,
    answered: Vec<(Call, Answer)>,
    next: Next,
    /// What its next step does, as a trace records it (kept here so that listing actions costs nothing).
    made: Made,
}

/// A process's place in its handler run. Equal and hashed by the prefix's identity.
#[derive(Clone)]
pub struct Prefix(Arc<Node>);

impl Prefix {
    pub fn request(&self) -> &Request {
        &self.0.request
    }

    pub fn answered(&self) -> &[(Call, Answer)] {
        &self.0.answered
    }

    pub fn next(&self) -> &Next {
        &self.0.next
    }

    /// What its next step does, as a trace records it.
    pub fn made(&self) -> Made {
        self.0.made
    }
}

impl PartialEq for Prefix {
    fn eq(&self, other: &Prefix) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for Prefix {}

impl Hash for Prefix {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state)
    }
}

impl std::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefix")
            .field("answered", &self.0.answered)
            .field("next", &self.0.next)
            .finish()
    }
}

/// The prefixes met so far, by identity. Lookups only (never iterated), so its order matters nowhere.
#[derive(Default)]
pub struct Prefixes {
    nodes: RwLock<HashMap<u64, Prefix>>,
}

fn identity(parent: Option<u64>, part: &impl Hash) -> u64 {
    let mut hasher = XxHash64::with_seed(0);
    parent.hash(&mut hasher);
    part.hash(&mut hasher);
    hasher.finish()
}

impl Prefixes {
    /// A handler started on `request`, no call answered.
    pub fn start<H: Handler>(&self, handler: &H, request: &Request) -> Prefix {
        let id = identity(None, request);
        self.intern(
            id,
            |node| node.parent.is_none() && node.request == *request,
            || (None, request.clone(), Vec::new()),
            handler,
        )
    }

    /// After `prefix`'s next call got `answer`.
    pub fn answer<H: Handler>(&self, handler: &H, prefix: &Prefix, answer: Answer) -> Prefix {
        let Next::Call(call) = prefix.next() else {
            unreachable!("a handler waiting on a call")
        };
        let parent = prefix.0.id;
        let id = identity(Some(parent), &answer);
        let same = |node: &Node| {
            node.parent == Some(parent) && node.answered.last().map(|(_, a)| a) == Some(&answer)
        };
        self.intern(
            id,
            same,
            || {
                let mut answered = Vec::with_capacity(prefix.answered().len() + 1);
                answered.extend_from_slice(prefix.answered());
                answered.push((call.clone(), answer.clone()));
                (Some(parent), prefix.request().clone(), answered)
            },
            handler,
        )
    }

    fn intern<H: Handler>(
        &self,
        id: u64,
        same: impl Fn(&Node) -> bool,
        content: impl FnOnce() -> (Option<u64>, Request, Vec<(Call, Answer)>),
        handler: &H,
    ) -> Prefix {
        let found = self
            .nodes
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&id)
            .cloned();
        if let Some(found) = found {
            assert!(
                same(&found.0),
                "two handler prefixes share the identity {id:#x}"
            );
            return found;
        }
        let (parent, request, answered) = content();
        // A handler that is not deterministic stops the search, naming the call that differed.
        let next =
            next_step(handler, &request, &answered).unwrap_or_else(|error| panic!("{error}"));
        let made = Made::of(&next);
        let node = Prefix(Arc::new(Node {
            id,
            parent,
            request,
            answered,
            next,
            made,
        }));
        self.nodes
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(id)
            .or_insert(node)
            .clone()
    }
}
