/** The Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag or of the whole key, mod 16384). */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  let hashed = key;
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) hashed = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
