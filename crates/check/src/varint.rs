//! LEB128 varints: seven bits a byte, low bits first, the high bit set on every byte but the last.

#[inline]
pub(crate) fn push_varint(bytes: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        bytes.push(value as u8 | 0x80);
        value >>= 7;
    }
    bytes.push(value as u8);
}

/// Bytes `push_varint` writes for `value`.
#[inline]
pub(crate) fn varint_len(value: u64) -> usize {
    (64 - value.leading_zeros() as usize).max(1).div_ceil(7)
}

/// The varint at `*at`, moving `*at` past it.
#[inline]
pub(crate) fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut value = 0;
    let mut shift = 0;
    loop {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return value;
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::{push_varint, read_varint, varint_len};

    #[test]
    fn reads_back_what_it_wrote_in_the_bytes_it_said() {
        let values = [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ];
        let mut bytes = Vec::new();
        for value in values {
            let at = bytes.len();
            push_varint(&mut bytes, value);
            assert_eq!(bytes.len() - at, varint_len(value), "{value}");
        }
        let mut at = 0;
        for value in values {
            assert_eq!(read_varint(&bytes, &mut at), value);
        }
        assert_eq!(at, bytes.len());
    }
}
