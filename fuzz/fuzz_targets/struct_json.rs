//! Differential: the stream's fast `sdk_message` path (`struct_json::scan`, then the payload
//! and the assistant text read off the wire) against the prost-generated decoder plus
//! `struct_to_json` and `Event::text` on the JSON. For any frame: the same type, offset,
//! payload and text, or both refuse the frame. Input: one frame's payload (a
//! `RunStreamMessage`).
#![no_main]

use cursor_sdk::fuzzing::{sdk_frame_fast, sdk_frame_generated};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|frame: &[u8]| {
    let generated = sdk_frame_generated(frame);
    match sdk_frame_fast(frame) {
        // Not for the fast path: the reader hands it to the generated decoder, whatever it is.
        None => {}
        Some(Err(e)) => assert!(
            generated.is_err(),
            "the fast path refused ({e}) a frame the generated decoder reads: {generated:?}"
        ),
        Some(Ok(fast)) => match generated {
            Ok(Some(slow)) => assert_eq!(fast, slow),
            other => panic!("the fast path read {fast:?}, the generated decoder gave {other:?}"),
        },
    }
});
