/**
 * XLSForm → XForm conversion, in process (issue 7). Pure: no db, no http, no blobs; runs on Node
 * and Workers. Produces what pyxform 4.5 produces for the same spreadsheet
 * (shared/reference/xlsform/xlsform-spec.md, shared/reference/ODK XForms spec).
 */
import type { ConvertOptions, XlsFormResult } from './types';
import { readWorkbook } from './workbook';
import { buildXForm } from './build';

export { XlsFormError, type XlsFormResult, type ConvertOptions } from './types';

/**
 * Converts an XLSForm spreadsheet (.xlsx or .xls bytes) to an XForm.
 * @param bytes the uploaded file.
 * @param opts formIdFallback: the form id when the settings sheet names none (Central's
 *   X-XlsForm-FormId-Fallback, already percent-decoded); pyxform takes it from the file name.
 * @returns `{ xml, warnings, itemsets }`: the XForm text (UTF-8, no pretty printing), pyxform's
 *   warnings worded as pyxform words them, and the itemsets.csv text when the form has
 *   select_one_external questions (else null).
 * @throws XlsFormError with pyxform's message (without the `PyXFormError: ` prefix) for an invalid
 *   sheet, an unreadable file, or a workbook over the size limits. Pure.
 */
export function convertXlsForm(bytes: Uint8Array, opts: ConvertOptions = {}): XlsFormResult {
  const book = readWorkbook(bytes);
  return buildXForm(book, opts);
}
