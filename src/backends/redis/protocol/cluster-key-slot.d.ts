/** Types of `cluster-key-slot` (it ships none): the Redis Cluster hash slot of a key. */
declare module 'cluster-key-slot' {
  /** The hash slot (0 to 16383) of `key`: CRC16 of its `{…}` hash tag, or of the whole key. */
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
