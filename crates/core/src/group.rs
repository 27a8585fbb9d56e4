//! The group (cgroup) tree that group-aware policies (CFQ, BFQ, ioband) share.
//!
//! Groups are named by path (`/`, `/a`, `/a/b`) as a cgroup mount would show them. A weight of
//! `None` means "the policy's default" (500 for CFQ's blkio.weight, 100 for BFQ's io.weight),
//! so one scenario can run under policies with different weight scales.

use crate::request::GroupId;
use std::fmt;

/// One group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Full path, e.g. `/a/b`; the root is `/`.
    pub path: String,
    /// The parent; `None` only for the root.
    pub parent: Option<GroupId>,
    /// The weight asked for, or `None` for the policy's default.
    pub weight: Option<u32>,
}

/// A group path could not be added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupError {
    /// The path given.
    pub path: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "group {:?}: {}", self.path, self.reason)
    }
}

impl std::error::Error for GroupError {}

/// The tree of groups. Index 0 is the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTree {
    groups: Vec<Group>,
}

impl Default for GroupTree {
    fn default() -> Self {
        GroupTree::new()
    }
}

impl GroupTree {
    /// A tree holding only the root.
    pub fn new() -> GroupTree {
        GroupTree {
            groups: vec![Group {
                path: "/".to_string(),
                parent: None,
                weight: None,
            }],
        }
    }

    /// Add `path` (creating missing ancestors with default weight), or update its weight if it
    /// exists. Returns its id.
    pub fn add(&mut self, path: &str, weight: Option<u32>) -> Result<GroupId, GroupError> {
        let err = |reason| GroupError {
            path: path.to_string(),
            reason,
        };
        if !path.starts_with('/') {
            return Err(err("a group path starts with '/'"));
        }
        let mut id = GroupId::ROOT;
        let mut full = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if part == "." || part == ".." {
                return Err(err("'.' and '..' are not allowed in a group path"));
            }
            full.push('/');
            full.push_str(part);
            id = match self.lookup(&full) {
                Some(g) => g,
                None => {
                    self.groups.push(Group {
                        path: full.clone(),
                        parent: Some(id),
                        weight: None,
                    });
                    GroupId(self.groups.len() as u32 - 1)
                }
            };
        }
        if weight.is_some() {
            self.groups[id.0 as usize].weight = weight;
        }
        Ok(id)
    }

    /// The group at `path`, if present.
    pub fn lookup(&self, path: &str) -> Option<GroupId> {
        let norm = if path.len() > 1 {
            path.trim_end_matches('/')
        } else {
            path
        };
        self.groups
            .iter()
            .position(|g| g.path == norm)
            .map(|i| GroupId(i as u32))
    }

    /// The group `id`. Panics on an id this tree did not hand out.
    pub fn get(&self, id: GroupId) -> &Group {
        &self.groups[id.0 as usize]
    }

    /// The weight of `id`, or `default` if none was set.
    pub fn weight_or(&self, id: GroupId, default: u32) -> u32 {
        self.get(id).weight.unwrap_or(default)
    }

    /// Number of groups, the root included.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Always false: the root is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every group id, root first, parents before children.
    pub fn ids(&self) -> impl Iterator<Item = GroupId> {
        (0..self.groups.len() as u32).map(GroupId)
    }

    /// The path from the root down to `id`, both included.
    pub fn ancestry(&self, id: GroupId) -> Vec<GroupId> {
        let mut v = vec![id];
        let mut cur = id;
        while let Some(p) = self.get(cur).parent {
            v.push(p);
            cur = p;
        }
        v.reverse();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_create_ancestors_and_are_found_again() {
        let mut t = GroupTree::new();
        let b = t.add("/a/b", Some(200)).unwrap();
        let a = t.lookup("/a").unwrap();
        assert_eq!(t.get(b).parent, Some(a));
        assert_eq!(t.ancestry(b), vec![GroupId::ROOT, a, b]);
        assert_eq!(t.add("/a/b/", None).unwrap(), b);
        assert_eq!(t.weight_or(b, 500), 200);
        assert_eq!(t.weight_or(a, 500), 500);
    }

    #[test]
    fn relative_and_dotted_paths_are_refused() {
        let mut t = GroupTree::new();
        assert!(t.add("a", None).is_err());
        assert!(t.add("/a/../b", None).is_err());
    }
}
