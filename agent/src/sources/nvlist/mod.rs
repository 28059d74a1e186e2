//! Decoder for packed nvlists (NATIVE encoding), as `/dev/zfs` returns them.
