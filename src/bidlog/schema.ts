/**
 * The Parquet schema of the shipped bid log and the SQL that fills it (DuckDB), derived from the
 * record types (src/bidlog/records.ts) field by field. One row per NDJSON record; every field of
 * every record kind has its column, `raw` keeps the whole line of a record with a body (`req`, `res`)
 * and of a line that is not JSON (what the columns do not hold); the other records are their columns.
 * docs/log-pipeline.md lists the columns. Records are read by DuckDB itself from the staged zstd
 * frames (no JSON parsing in JavaScript); fields that are missing or of another type become NULL.
 */
import type { RecordLines } from './records';

/** Key of the wrapper object a line that is not JSON is staged in (the slow path, see ParquetStore). */
export const INVALID_LINE_KEY = '__invalid_line';

/** Valid epoch milliseconds (years 1970 to 9999); anything else is no timestamp. */
const MAX_TS = 253_402_300_799_999;
const HOUR_MS = 3_600_000;

/**
 * Where one field of a record goes: how DuckDB's json_transform reads it (lenient: a value of
 * another type is NULL) and the Parquet columns it fills. A column's SQL reads `r` (the record as
 * read), `ts_ms` (its valid `ts`) and `bids` (the response's bids, flattened). Without `columns`, the
 * field is the column of its name in snake_case, as read.
 */
export interface FieldSpec {
  readonly read: unknown;
  readonly columns?: Readonly<Record<string, string>>;
}

type Fields<L> = { readonly [F in keyof L]-?: FieldSpec };

const S = (read: string | readonly string[], columns?: Record<string, string>): FieldSpec => ({ read, columns });
const VARCHAR = S('VARCHAR');

/** Media asked for (request) or of the bids (response, by `mtype`). */
const MEDIA = `CASE
    WHEN r.media IS NOT NULL THEN r.media
    WHEN r.req.imp IS NOT NULL THEN list_filter([
      CASE WHEN list_bool_or([i.banner IS NOT NULL FOR i IN r.req.imp]) THEN 'banner' END,
      CASE WHEN list_bool_or([i.video IS NOT NULL FOR i IN r.req.imp]) THEN 'video' END,
      CASE WHEN list_bool_or([i.audio IS NOT NULL FOR i IN r.req.imp]) THEN 'audio' END,
      CASE WHEN list_bool_or([i.native IS NOT NULL FOR i IN r.req.imp]) THEN 'native' END], x -> x IS NOT NULL)
    WHEN bids IS NOT NULL THEN list_sort(list_distinct([CASE b.mtype WHEN 1 THEN 'banner' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'native' END FOR b IN bids IF b.mtype BETWEEN 1 AND 4]))
  END`;
const CUR = 'coalesce(r.res.cur, r.cur)';
/** Imps of a request: the compact count, else (records of earlier versions) the body's. */
const IMPS = 'coalesce(r.imps, len(r.req.imp))';
/** Deal ids: a response's bids' (compact or from `res`), a request's compact list. */
const DEALS = 'CASE WHEN bids IS NOT NULL THEN [b.dealid FOR b IN bids IF b.dealid IS NOT NULL] ELSE r.deals END';
/**
 * How an imp's media object is read when only its presence matters: as a struct of one field,
 * which is non-NULL for any present value (as JSON would be) without writing the object back out as text.
 */
const PRESENT = { w: 'BOOLEAN' };

const HEAD = {
  ts: S('DOUBLE', { ts: 'epoch_ms(ts_ms)' }),
  type: VARCHAR,
  host: VARCHAR,
  worker: VARCHAR,
  id: VARCHAR,
  name: VARCHAR,
} as const;

/**
 * Every field of every kind of record (src/bidlog/records.ts), typed against the lines as written:
 * a field added to a record type and not placed here fails to compile. The order of the first
 * appearance of each column is the order of the Parquet columns.
 */
export const RECORD_FIELDS: { readonly [K in keyof RecordLines]: Fields<RecordLines[K]> } = {
  request: {
    ...HEAD,
    exchange: VARCHAR,
    test: S('BOOLEAN'),
    inv: VARCHAR,
    domain: VARCHAR,
    bundle: VARCHAR,
    devicetype: S('INTEGER'),
    os: VARCHAR,
    country: VARCHAR,
    imps: S('INTEGER', { imps: IMPS }),
    media: S(['VARCHAR'], { media: MEDIA }),
    sizes: S(['VARCHAR']),
    floors: S(['DOUBLE']),
    floorcurs: S(['VARCHAR'], { floor_curs: 'r.floorcurs' }),
    deals: S(['VARCHAR'], { deals: DEALS }),
    curs: S(['VARCHAR'], { request_curs: 'r.curs' }),
    at: S('INTEGER', { auction_type: 'r.at' }),
    tmax: S('INTEGER'),
    user: S('VARCHAR', { user_id: 'r.user' }),
    bytes: S('BIGINT', { body_bytes: 'r.bytes' }),
    hash: S('VARCHAR', { body_hash: 'r.hash' }),
    body: S('BOOLEAN', { body_kept: 'r.body' }),
    req: { read: { imp: [{ banner: PRESENT, video: PRESENT, audio: PRESENT, native: PRESENT }] }, columns: { imps: IMPS, media: MEDIA } },
  },
  response: {
    ...HEAD,
    exchange: VARCHAR,
    test: S('BOOLEAN'),
    status: S('INTEGER'),
    reason: VARCHAR,
    ms: S('DOUBLE'),
    dropped: S('INTEGER'),
    privacy: S('JSON', { privacy: 'CAST(r.privacy AS VARCHAR)' }),
    cur: S('VARCHAR', { cur: CUR }),
    mv: S('VARCHAR', { markup_version: 'r.mv' }),
    bids: {
      read: [{ id: 'VARCHAR', impid: 'VARCHAR', price: 'DOUBLE', cid: 'VARCHAR', crid: 'VARCHAR', dealid: 'VARCHAR', mtype: 'INTEGER', value: 'DOUBLE' }],
      columns: { bids: 'len(bids)', bid_values: '[b.value FOR b IN r.bids]' },
    },
    res: {
      read: {
        cur: 'VARCHAR',
        seatbid: [{ bid: [{ id: 'VARCHAR', impid: 'VARCHAR', price: 'DOUBLE', cid: 'VARCHAR', crid: 'VARCHAR', dealid: 'VARCHAR', mtype: 'INTEGER' }] }],
      },
      columns: {
        media: MEDIA,
        bids: 'len(bids)',
        bid_ids: '[b.id FOR b IN bids]',
        imp_ids: '[b.impid FOR b IN bids]',
        prices: '[b.price FOR b IN bids]',
        cids: '[b.cid FOR b IN bids]',
        crids: '[b.crid FOR b IN bids]',
        deals: DEALS,
        cur: CUR,
      },
    },
  },
  notice: {
    ...HEAD,
    bid: VARCHAR,
    imp: VARCHAR,
    crid: VARCHAR,
    cid: VARCHAR,
    price: S('DOUBLE'),
    bidPrice: S('DOUBLE'),
    cur: S('VARCHAR', { cur: CUR }),
    deal: VARCHAR,
    bidTs: S('DOUBLE', { bid_ts: `CASE WHEN r.bidTs >= 0 AND r.bidTs <= ${MAX_TS} THEN epoch_ms(CAST(r.bidTs AS BIGINT)) END` }),
    loss: S('INTEGER'),
    counted: S('BOOLEAN'),
    landing: VARCHAR,
    // `user` is a reserved word in SQL.
    user: S('VARCHAR', { user_id: 'r.user' }),
    exchange: VARCHAR,
    test: S('BOOLEAN'),
  },
  failed: { ...HEAD, error: VARCHAR },
};

function snake(field: string): string {
  return field.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

/** The Parquet columns a record field fills and the SQL of each (by default one column, its name in snake case). */
function columnSql(spec: FieldSpec, field: string): Array<[string, string]> {
  return Object.entries(spec.columns ?? { [snake(field)]: `r.${field}` });
}

/** json_transform's structure (every field of every kind) and the record columns, in order, with their SQL. */
function derive(): { structure: Record<string, unknown>; columns: Map<string, string> } {
  const structure: Record<string, unknown> = {};
  const columns = new Map<string, string>();
  for (const kind of Object.values(RECORD_FIELDS) as Array<Record<string, FieldSpec>>) {
    for (const [field, spec] of Object.entries(kind)) {
      const read = JSON.stringify(spec.read);
      if (field in structure && JSON.stringify(structure[field]) !== read) throw new Error(`bid log field ${field} is read as two types`);
      structure[field] = spec.read;
      for (const [column, sql] of columnSql(spec, field)) {
        const had = columns.get(column);
        if (had !== undefined && had !== sql) throw new Error(`bid log column ${column} is filled two ways`);
        columns.set(column, sql);
      }
    }
  }
  return { structure, columns };
}

const DERIVED = derive();

/** The fields read from each record, as DuckDB's json_transform types them (lenient: a mismatch is NULL). */
const STRUCTURE = JSON.stringify({ ...DERIVED.structure, [INVALID_LINE_KEY]: 'VARCHAR' });

/** The Parquet columns, in order: those of the records' fields, then `frame` (the hash of its frame) and `raw` (the whole line, when it has a body or is not JSON). */
export const PARQUET_COLUMNS: readonly string[] = [...DERIVED.columns.keys(), 'frame', 'raw'];

/** The Parquet columns a record field lands in. */
export function columnsOf(spec: FieldSpec, field: string): string[] {
  return columnSql(spec, field).map(([column]) => column);
}

/**
 * Longest record DuckDB reads on the fast path (its read buffer is twice this, and it is resident
 * while a batch loads: 16 MiB cost the shipper ~35 MiB more peak RSS than 2 MiB). A request record
 * holds the request body, bounded by the bidder's BODY_LIMIT_BYTES (1 MiB by default); a batch with
 * a longer record takes the slow path, which raises the bound to its longest line.
 */
export const MAX_RECORD_BYTES = 2 * 1024 * 1024;

export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/**
 * Creates the temporary table `batch` from the staged files (`<frame hash>.ndjson[.zst]`): the
 * Parquet columns plus `part_h`, the record's UTC hour (epoch hours) from its valid `ts`, NULL
 * without one (FILL_HOURS_SQL places those). Records stay in the order of their frames (a request
 * next to its response: they compress better so than sorted by type). `raw` is the line only where
 * the columns do not hold the record: a compact record's line again cost about a fifth of the
 * shipper's CPU (its copy and its Parquet column) and tripled the bytes per record
 * (tools/bench/shipper-cpu.bench.ts).
 */
export function loadBatchSql(files: readonly string[], maxRecordBytes: number = MAX_RECORD_BYTES): string {
  return `
CREATE OR REPLACE TEMP TABLE batch AS
WITH src AS (
  SELECT regexp_extract(filename, '([0-9a-f]{32})\\.ndjson', 1) AS frame, json AS j
  FROM read_ndjson_objects([${files.map(sqlString).join(', ')}], filename = true, maximum_object_size = ${Math.max(MAX_RECORD_BYTES, Math.ceil(maxRecordBytes))})
), t AS (
  SELECT frame, j, json_transform(j, ${sqlString(STRUCTURE)}) AS r FROM src
), f AS (
  SELECT frame, j, r,
    CASE WHEN r.ts >= 0 AND r.ts <= ${MAX_TS} THEN CAST(r.ts AS BIGINT) END AS ts_ms,
    CASE WHEN r.bids IS NOT NULL
      THEN [{'id': b.id, 'impid': b.impid, 'price': b.price, 'cid': b.cid, 'crid': b.crid, 'dealid': b.dealid, 'mtype': b.mtype} FOR b IN r.bids]
      ELSE flatten([s.bid FOR s IN r.res.seatbid IF s.bid IS NOT NULL]) END AS bids
  FROM t
)
SELECT
${[...DERIVED.columns].map(([column, sql]) => `  ${sql} AS ${column},`).join('\n')}
  frame,
  CASE WHEN r.${INVALID_LINE_KEY} IS NOT NULL THEN r.${INVALID_LINE_KEY} WHEN r.req IS NOT NULL OR r.res IS NOT NULL THEN CAST(j AS VARCHAR) END AS raw,
  ts_ms // ${HOUR_MS} AS part_h
FROM f`;
}

/**
 * Places the records without a valid `ts` in the hour of their frame's earliest record (hour 0,
 * 1970-01-01 00, when the frame has none), so that the same frames always give the same
 * partitions. Such records are rare: this runs only when the batch has one (a window over every
 * row of every batch cost about a sixth of the shipper's CPU).
 */
export const FILL_HOURS_SQL = `UPDATE batch SET part_h = coalesce(m.h, 0)
FROM (SELECT frame, min(part_h) AS h FROM batch GROUP BY frame) AS m
WHERE batch.part_h IS NULL AND batch.frame IS NOT DISTINCT FROM m.frame`;

/** The hours (epoch hours, NULL for records without a valid `ts` until FILL_HOURS_SQL ran) of the loaded batch and their record counts. */
export const BATCH_HOURS_SQL = 'SELECT part_h, count(*) AS n FROM batch GROUP BY ALL ORDER BY ALL';

/** The partition of an epoch hour: `date=YYYY-MM-DD/hour=HH` (UTC). */
export function partitionOf(hour: number): { date: string; hour: string } {
  const iso = new Date(hour * HOUR_MS).toISOString();
  return { date: iso.slice(0, 10), hour: iso.slice(11, 13) };
}

/**
 * Rows per Parquet row group: the writer holds one row group in memory, so this bounds its memory
 * (~300 MB less at the peak of a 78k-record batch than DuckDB's default of 122,880 rows, bench/RESULTS-ship.md).
 */
const ROW_GROUP_ROWS = 32_768;

/**
 * Writes one hour of the batch to `file` as Parquet, zstd level 1: level 3 (DuckDB's default)
 * took a third more CPU in the COPY for files 1 % smaller (bench/RESULTS-ship.md).
 */
export function copyHourSql(hour: number, file: string): string {
  return `COPY (SELECT ${PARQUET_COLUMNS.join(', ')} FROM batch WHERE part_h = ${Math.trunc(hour)})
TO ${sqlString(file)} (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`;
}
