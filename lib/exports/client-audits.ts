/**
 * The client audit log of a ZIP export (`<xmlFormId> - audit.csv`): the events of every exported
 * submission's `audit.csv`, each row prefixed with the submission's instance ID, in Central's
 * column set (lib/data/client-audits.js, behaviour only). Pure: CSV text in, rows out.
 */

/** Central's client audit columns, in its order (after `instance ID`). */
export const CLIENT_AUDIT_HEADERS = ['event', 'node', 'start', 'end', 'latitude', 'longitude', 'accuracy', 'old-value', 'new-value', 'user', 'change-reason'];

/**
 * Parses a client audit CSV as Central reads it (csv-parse with bom, trim, skip_empty_lines,
 * relax_column_count, relax_quotes): the first row names the columns; each later row becomes
 * the cells of CLIENT_AUDIT_HEADERS by name ('' for a column it lacks); unknown columns are dropped.
 * @returns rows of CLIENT_AUDIT_HEADERS.length cells. Pure.
 */
export function parseClientAudit(text: string): string[][] {
  const records = parseCsvRecords(text.replace(/^\uFEFF/, ''));
  const header = records.shift();
  if (!header) return [];
  const at = CLIENT_AUDIT_HEADERS.map((h) => header.indexOf(h));
  return records.map((r) => at.map((i) => (i < 0 ? '' : r[i] ?? '')));
}

/** RFC 4180 records, cells trimmed, blank lines skipped; a quote inside an unquoted cell is text. */
function parseCsvRecords(text: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let inQuotes = false;
  const endCell = () => {
    row.push(quoted ? cell : cell.trim());
    cell = '';
    quoted = false;
  };
  const endRow = () => {
    endCell();
    if (!(row.length === 1 && row[0] === '')) out.push(row);
    row = [];
  };
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i]!;
    if (inQuotes) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (ch === '"') inQuotes = false;
      else cell += ch;
    } else if (ch === '"' && cell.trim() === '' && !quoted) {
      cell = '';
      quoted = true;
      inQuotes = true;
    } else if (ch === ',') endCell();
    else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i += 1;
      endRow();
    } else if (!(quoted && /\s/.test(ch))) cell += ch;
  }
  if (cell !== '' || row.length > 0) endRow();
  return out;
}
