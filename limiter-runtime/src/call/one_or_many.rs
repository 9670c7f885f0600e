//! [`OneOrMany`]: a call's limits, and their rulings, kept inline when there is one (the common call).

use std::ops::{Deref, DerefMut};

/// One value, or several: a call of one limit (the common call) keeps its limit, and its answer, inline.
#[derive(Debug, Clone)]
pub(crate) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> Deref for OneOrMany<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        }
    }
}

impl<T> DerefMut for OneOrMany<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            OneOrMany::One(one) => std::slice::from_mut(one),
            OneOrMany::Many(many) => many,
        }
    }
}

impl<T> FromIterator<T> for OneOrMany<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let Some(first) = iter.next() else {
            return OneOrMany::Many(Vec::new());
        };
        match iter.next() {
            None => OneOrMany::One(first),
            Some(second) => {
                let mut many = Vec::with_capacity(2 + iter.size_hint().0);
                many.push(first);
                many.push(second);
                many.extend(iter);
                OneOrMany::Many(many)
            }
        }
    }
}

impl<T> OneOrMany<T> {
    /// Returns each value, made by `f` of each of these.
    pub(crate) fn map<U>(&self, f: impl FnMut(&T) -> U) -> OneOrMany<U> {
        match self {
            OneOrMany::One(one) => OneOrMany::One({ f }(one)),
            OneOrMany::Many(many) => OneOrMany::Many(many.iter().map(f).collect()),
        }
    }
}
