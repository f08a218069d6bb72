//! The options JSON (`options::*`: agent, send, list and query options, the proto3 JSON mapping
//! with the shorthands and unknown keys refused; `ClientOptions::from_json`; `user_message`).
//! Input: JSON text. Every parser either refuses it with `InvalidArgument` or accepts it; what
//! it accepts, written back as proto3 JSON, parses again to the same options (the shorthand
//! rewriting is idempotent and loses nothing).
#![no_main]

use cursor_sdk::{options, ClientOptions, ErrorKind, Result};
use libfuzzer_sys::fuzz_target;
use serde::{de::DeserializeOwned, Serialize};

fn refused_as_invalid<T>(what: &str, r: &Result<T>) {
    if let Err(e) = r {
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{what}: {e}");
    }
}

/// `parse` on `text`, and on what it accepted written back as JSON.
fn roundtrip<T>(what: &str, text: &str, parse: fn(Option<&str>) -> Result<T>)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let first = parse(Some(text));
    refused_as_invalid(what, &first);
    let Ok(first) = first else { return };
    let written = serde_json::to_string(&first).expect("options serialize");
    match parse(Some(&written)) {
        Ok(again) => assert_eq!(again, first, "{what}: {written}"),
        Err(e) => panic!("{what}: accepted {text:?} but not its own JSON {written}: {e}"),
    }
}

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else { return };
    roundtrip("agent", text, options::agent_options);
    roundtrip("send", text, options::send_options);
    roundtrip("list agents", text, options::list_agents_options);
    roundtrip("list runs", text, options::list_runs_options);
    roundtrip("get run", text, options::get_run_options);
    roundtrip("agent operation", text, options::agent_operation_options);
    roundtrip("messages", text, options::messages_options);
    // With the request-level keys: the same options as without them, once they are removed.
    let with = options::agent_request_options(Some(text));
    refused_as_invalid("agent request", &with);
    let with = options::send_request_options(Some(text));
    refused_as_invalid("send request", &with);
    if let Ok((opts, extras)) = with {
        if extras == options::RequestExtras::default() && options::send_options(Some(text)).is_ok() {
            assert_eq!(Some(opts), options::send_options(Some(text)).ok());
        }
    }
    match options::user_message(text) {
        Ok(m) if !text.trim_start().starts_with('{') => assert_eq!(m.text, text),
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind, ErrorKind::InvalidArgument, "message: {e}"),
    }
    let client = ClientOptions::from_json(Some(text));
    refused_as_invalid("client", &client);
    if let Ok(c) = client {
        c.validate().expect("accepted client options validate");
    }
});
