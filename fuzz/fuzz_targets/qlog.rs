//! A qlog trace as `mpquic report` reads it (`mpquic_cli::qlog_reader`): JSON-SEQ records, the
//! header first, then events until the end or a record cut short. Whatever the file holds, the
//! reader answers with events or an error that says where, never a panic.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mpquic_cli::qlog_reader::QlogReader;

fuzz_target!(|data: &[u8]| {
    let mut reader = match QlogReader::new(data, Path::new("fuzz.sqlog")) {
        Ok(reader) => reader,
        Err(e) => return drop(e.to_string()),
    };
    let _ = reader.header();
    loop {
        match reader.next_event() {
            Ok(Some(event)) => drop((event.time, event.name.len(), event.data.get().len())),
            Ok(None) => break,
            Err(e) => return drop(e.to_string()),
        }
    }
    assert!(reader.position() <= data.len() as u64);
    assert!(matches!(reader.next_event(), Ok(None)), "the end stays the end");
    if let Some(partial) = reader.partial() {
        assert!(partial.offset < data.len() as u64 && partial.line <= reader.records());
    }
});
