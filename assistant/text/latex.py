"""LaTeX that abstracts carry from their sources, as plain Unicode for a person to read (quotes stay verbatim in
--json and exports; only what a person reads is changed)."""

from __future__ import annotations

import re
import unicodedata

#: LaTeX symbols as the characters they stand for.
_LATEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π",
    "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Sigma": "Σ", "Phi": "Φ", "Omega": "Ω",
    "times": "×", "to": "→", "rightarrow": "→", "leftarrow": "←", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥",
    "approx": "≈", "sim": "~", "cdot": "·", "infty": "∞", "pm": "±", "neq": "≠", "ll": "≪", "gg": "≫",
    "in": "∈", "sqrt": "√", "ldots": "…", "dots": "…", "star": "⋆", "|": "‖",
}
_SUPERSCRIPT = str.maketrans("0123456789+-n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ⁿ")
_TEXT_MACRO = re.compile(r"\\(?:emph|textit|textbf|textsc|texttt|textrm|textsf|underline|url|mathrm|mathbf|mathcal|"
                         r"mathit|mathtt|mathsf|mathbb|mathfrak|boldsymbol|bm|text|operatorname|"
                         # accents over a symbol in math, read as the symbol: \hat{\theta} -> θ
                         r"hat|widehat|tilde|widetilde|bar|overline|vec|dot|ddot)\{([^{}]*)\}")
_MATH = re.compile(r"\$(?!\s)([^$\n]{1,80}?)(?<!\s)\$")  # "$x$", not "costs $5 and $6"


#: LaTeX accents as combining marks (``N\\"uwa`` -> ``Nüwa``, ``\\'{e}`` -> ``é``, ``\\v{c}`` -> ``č``).
_ACCENT_MARKS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304",
                 ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
                 "r": "\u030a"}
_ACCENT = re.compile(r"\{?\\(?:([\"'`^~=.])\s*\{?(\\i|[A-Za-z])\}?|([uvHckr])\{(\\i|[A-Za-z])\})\}?")
_LETTERS = {"ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "aa": "å", "AA": "Å", "l": "ł", "L": "Ł",
            "oe": "œ", "OE": "Œ"}


def _accent(m: re.Match) -> str:
    mark = _ACCENT_MARKS[m.group(1) or m.group(3)]
    letter = m.group(2) or m.group(4)
    return unicodedata.normalize("NFC", ("i" if letter == "\\i" else letter) + mark)


def _math(body: str) -> str:
    body = _unwrapped(body)
    body = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"\1/\2", body)
    body = re.sub(r"\\([A-Za-z]+|\|)", lambda m: _LATEX_SYMBOLS.get(m.group(1), m.group(0)), body)
    body = re.sub(r"\^\{?([0-9+\-n]{1,3})\}?", lambda m: m.group(1).translate(_SUPERSCRIPT), body)
    body = re.sub(r"\\([%&_#$])", r"\1", body)
    return body.replace("\\,", " ").replace("{", "").replace("}", "")


def _unwrapped(text: str) -> str:
    """``text`` with its text macros replaced by what they hold, the innermost first: ``\\textbf{\\textit{(i)} x}``
    -> ``(i) x`` (a macro holding another was left as ``\\textbf(i) x``)."""
    for _ in range(4):
        text, n = _TEXT_MACRO.subn(r"\1", text)
        if not n:
            break
    return text


#: TeX's dashes between words or numbers ("Qronos---a new", "SWD) --- a", "X -- a benchmark", "3--5",
#: "Kurdyka--Łojasiewicz"); a Markdown
#: rule or table ("---" alone, "| --- |") and an option ("--force") are left as they are.
_TEX_DASHES = re.compile(r"(?<=[\w)])---(?=\w)|(?<=[\w)]) ---? (?=\w)|(?<=\d)--(?=\d)|(?<=[^\W\d_])--(?=[^\W\d_])")


def readable(text: str) -> str:
    """Abstract text with its LaTeX markup as plain Unicode, for a person to read: ``86.2\\%`` -> ``86.2%``,
    ``\\emph{link function}`` -> ``link function``, ``$\\alpha$-mixture`` -> ``α-mixture``, ``SRe$^2$L`` ->
    ``SRe²L``, two backquotes ... two quotes -> curly quotes, TeX's ``---`` and ``--`` between words -> dashes. Text
    without markup comes back as it is."""
    if "\\" not in text and "$" not in text and "``" not in text and "{" not in text and "**" not in text \
            and "--" not in text:
        return text
    text = _ACCENT.sub(_accent, text)
    text = re.sub(r"\{\\(ss|o|O|ae|AE|aa|AA|l|L|oe|OE)\}|\\(ss|o|O|ae|AE|aa|AA|l|L|oe|OE)(?:\{\}|\b\s?)",
                  lambda m: _LETTERS[m.group(1) or m.group(2)], text)  # "\L{}ojasiewicz" -> "Łojasiewicz"
    text = _TEX_DASHES.sub(lambda m: m.group().replace("---", "\u2014").replace("--", "\u2013"), text)
    text = re.sub(r"\*\*([^*\n]+)\*\*", r"\1", text)  # Markdown bold: "**R**ectified **D**ecoupled"
    text = _MATH.sub(lambda m: _math(m.group(1)), text)
    text = _unwrapped(text)
    text = re.sub(r"(?<![\\\w])\{([\w -]+)\}", r"\1", text)  # a bare group: "two {efficient} algorithms"
    text = re.sub(r"\\([%&_#$])", r"\1", text)
    text = re.sub(r"\\(times|to|approx|sim|cdot|pm|leq|geq)\b", lambda m: _LATEX_SYMBOLS[m.group(1)], text)
    return text.replace("``", "“").replace("''", "”")
