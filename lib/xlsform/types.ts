/** Shapes shared by the XLSForm converter (lib/xlsform). Pure. */

/** What a conversion gives (pyxform-http's `{ result, warnings, itemsets }`). */
export interface XlsFormResult {
  /** The XForm, as pyxform writes it with pretty_print=False. */
  xml: string;
  /** pyxform's warnings, one string each, in pyxform's order and words. */
  warnings: string[];
  /** itemsets.csv (select_one_external choices) or null. */
  itemsets: string | null;
}

export interface ConvertOptions {
  /** Form id when the settings sheet has no form_id (X-XlsForm-FormId-Fallback, decoded). */
  formIdFallback?: string | null;
  /**
   * The primary instance's root element name when the settings sheet has no `name` (pyxform's
   * `form_name`; 'data' by default, as pyxform-http). The pyxform test suite runs with 'test_name'.
   */
  formName?: string | null;
}

/**
 * A conversion error as pyxform words it (Central returns it as 400.15 `{ error, warnings }`).
 * `message` carries no `PyXFormError: ` prefix, as pyxform-http's `str(e)`.
 */
export class XlsFormError extends Error {
  constructor(message: string, readonly warnings: string[] = []) {
    super(message);
    this.name = 'XlsFormError';
  }
}
