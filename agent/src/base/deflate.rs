//! Raw deflate (RFC 1951) appended to a `Vec`, by one compressor kept between streams: the
//! history's records and the listener's gzip responses are both made this way.
//!
//! The compressor is kept, not made per stream: zlib-rs's state (its window and hash tables,
//! ~380 kB in one allocation) made anew each time is a block of that size taken from and
//! given back to the heap, and the small allocations made meanwhile kept its place, so that the
//! heap grew by another such block every few streams (the sample bench's agent, peak anonymous
//! memory: 2.1–5.1 MiB from run to run with one made per gzip response, 1.9–2.1 kept).
//!
//! Level 1 (zlib-rs's quick deflate) for both: the sample bench measured the lab's 97.8 kB
//! standard exposition at level 1 as 13.7 kB in 108 µs, level 2 11.5 kB in 180 µs, level 3
//! 10.7 kB in 320 µs, level 0 (stored) 97.9 kB in 12 µs (400 runs each, wall time on a loaded
//! machine); for the history's MessagePack the default level cost about three times the CPU
//! for ~12% fewer bytes (the lab captures). A sixth more bytes on a scrape or on disk is
//! worth a half to two thirds less CPU in every reading.

use flate2::{Compress, Compression, FlushCompress, Status};

/// A level-1 raw-deflate compressor, made by the first stream and reset for each next one.
#[derive(Debug, Default)]
pub struct Deflater {
    state: Option<Compress>,
}

impl Deflater {
    /// `pieces`, in order, as one raw deflate stream appended to `out`. Compressing into
    /// memory fails only on a compressor's own error (none is expected); `out` then holds a
    /// partial stream that the caller drops.
    pub fn stream<'p>(
        &mut self,
        pieces: impl IntoIterator<Item = &'p [u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let deflate = self
            .state
            .get_or_insert_with(|| Compress::new(Compression::fast(), false));
        deflate.reset();
        let error = |e: flate2::CompressError| format!("deflate: {e}");
        for mut piece in pieces {
            while !piece.is_empty() {
                let before = deflate.total_in();
                // `compress_vec` writes only into spare capacity: room for the piece at the
                // ~4× that level 1 shrinks text and MessagePack by; a piece that shrinks less
                // goes on in the next turn.
                out.reserve(piece.len() / 4 + 1024);
                deflate
                    .compress_vec(piece, out, FlushCompress::None)
                    .map_err(error)?;
                let consumed = usize::try_from(deflate.total_in() - before).unwrap_or(piece.len());
                piece = &piece[consumed..];
            }
        }
        loop {
            out.reserve(1024);
            match deflate
                .compress_vec(&[], out, FlushCompress::Finish)
                .map_err(error)?
            {
                Status::StreamEnd => return Ok(()),
                Status::Ok | Status::BufError => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn inflate(bytes: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        flate2::read::DeflateDecoder::new(bytes)
            .read_to_end(&mut plain)
            .unwrap();
        plain
    }

    /// Pieces of every size (empty, one byte, longer than the reserve made for them, and
    /// incompressible ones, which deflate grows) come back whole and in order, stream after
    /// stream from one kept compressor, each appended after what `out` held.
    #[test]
    fn pieces_come_back_whole_and_in_order_stream_after_stream() {
        let mut noise = Vec::with_capacity(300_000);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        while noise.len() < 300_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            noise.extend_from_slice(&x.to_le_bytes());
        }
        let text = b"zpulse_vdev_read_ops_total{pool=\"tank\"} 12\n".repeat(5_000);
        let mut deflater = Deflater::default();
        let streams: [Vec<&[u8]>; 4] = [
            vec![],
            vec![b"", b"a", b""],
            vec![&text, &noise, b"end"],
            vec![&noise[..1], &text[..10], &noise],
        ];
        for pieces in streams {
            let mut out = b"kept".to_vec();
            deflater.stream(pieces.iter().copied(), &mut out).unwrap();
            assert_eq!(&out[..4], b"kept");
            assert_eq!(inflate(&out[4..]), pieces.concat());
        }
    }
}
