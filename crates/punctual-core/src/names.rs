//! Names that validate themselves and name a resource: queues and calendars (a leaf
//! module, so that the task model, the calendars and the policies all use them
//! without importing each other), and the macro that gives every such newtype its
//! text, comparisons and serde form.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

macro_rules! string_newtype {
    ($name:ident) => {
        impl $name {
            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        /// Looks one up by its text in maps keyed by it: it orders as its text does.
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::new(text).map_err(serde::de::Error::custom)
            }
        }
        impl TryFrom<&str> for $name {
            type Error = Error;
            fn try_from(text: &str) -> Result<Self> {
                $name::new(text)
            }
        }
        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(text: String) -> Result<Self> {
                $name::new(text)
            }
        }
    };
}
pub(crate) use string_newtype;

/// A queue name: 1–128 characters from `A-Z a-z 0-9 . _ : -`. It selects the handler.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueName(String);

impl QueueName {
    /// The longest queue name, in characters.
    pub const MAX_LEN: usize = 128;

    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<QueueName> {
        let name = name.into();
        check_name("queue", &name, Self::MAX_LEN)?;
        Ok(QueueName(name))
    }
}

/// Checks a name of a resource (a queue, a calendar): 1–`max_len` characters from
/// `A-Z a-z 0-9 . _ : -`; the error names `field`.
pub fn check_name(field: &'static str, name: &str, max_len: usize) -> Result<()> {
    if name.is_empty() || name.len() > max_len {
        return Err(Error::invalid(
            field,
            format!("a {field} name is 1 to {max_len} characters, this one has {}", name.chars().count()),
        ));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))) {
        return Err(Error::invalid(
            field,
            format!("'{}' is not allowed in a {field} name: use letters, digits and . _ : -", bad.escape_default()),
        ));
    }
    Ok(())
}
string_newtype!(QueueName);

/// A working-time calendar's name: 1–128 characters from `A-Z a-z 0-9 . _ : -`, as a
/// queue's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CalendarName(String);

impl CalendarName {
    /// The longest name, in characters.
    pub const MAX_LEN: usize = 128;

    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<CalendarName> {
        let name = name.into();
        check_name("calendar", &name, Self::MAX_LEN)?;
        Ok(CalendarName(name))
    }
}
string_newtype!(CalendarName);

/// Who made a change, as a task's history names it: the name of the access token a
/// request came with (never the token itself), or a name the server gives its own
/// work. See [`crate::history`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Actor(std::sync::Arc<str>);

impl Actor {
    pub fn new(name: impl Into<std::sync::Arc<str>>) -> Actor {
        Actor(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
