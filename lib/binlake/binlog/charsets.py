"""Collation ids -> character sets -> Python codecs, for CHAR/VARCHAR/TEXT/ENUM/SET values.

Binary logs name the character set of a string only through a *collation id*: Table_map
optional metadata (``binlog_row_metadata=FULL``: DEFAULT_CHARSET, COLUMN_CHARSET,
ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET) and the client/connection/server ids of
a Query event's ``Q_CHARSET_CODE`` status variable.  This module maps such an id to its collation
and character set (:data:`COLLATIONS`), the character set to a Python codec (:data:`CODECS`), and
decodes the bytes (:func:`decode_text`), falling back to ``{"hex": ...}`` rather than guessing.

Where the data comes from (generated once by a throwaway script, then written here as literals;
regenerate the same way rather than editing by hand):

* MariaDB 10.11.19 (Debian 12 package), a private server started with ``--no-defaults``:
  ``SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS`` (322 ids
  below 2048) and ``SELECT ID, FULL_COLLATION_NAME, CHARACTER_SET_NAME FROM
  information_schema.COLLATION_CHARACTER_SET_APPLICABILITY`` (the same 322 plus the 920 UCA-14.0.0
  ``*_uca1400_*`` ids 2048-3271 that ``COLLATIONS`` lists with a NULL id), and ``MAXLEN`` of
  ``information_schema.CHARACTER_SETS`` for :data:`MAX_BYTES_PER_CHAR`.
* The 67 MySQL ids MariaDB 10.11 lacks (76, 248-250, 255-323 less 6 unused), and the check of
  MySQL's use of the shared ids 1-247: Oracle's MySQL Connector/Python 26.10
  (``mysql/connector/aio/charsets.py``, ``MYSQL_8_CHARSETS``/``MYSQL_5_CHARSETS``), cross-checked
  against Oracle's Connector/J ``CharsetMapping.java`` (same 1-323 list).  Every id that both
  servers define has the same character set in both; five have a different *name* in MySQL 8
  (:data:`MYSQL_COLLATION_NAMES`; the names kept in :data:`COLLATIONS` are MariaDB's).  MySQL
  before 8.0.30 (and 5.x) spells utf8mb3 as ``utf8`` (``utf8_general_ci`` ...): same ids.
  MariaDB 11.4.5+ defines 44 of them (``utf8mb4_*_0900_*`` aliases of uca1400 collations, ids
  255-309) under MySQL's ids and names (MariaDB ``mysql-test/main/ctype_utf8mb4_0900.result``),
  so they mean the same on both servers.
  No MySQL 9.x collation ids beyond 323 appear in either connector.
* Single-byte character sets: every byte 0x00-0xFF converted to utf32 by the MariaDB server
  (``CONVERT(CAST(x'NN' AS CHAR CHARACTER SET cs) USING utf32)``) and compared with Python's
  codecs.  Where Python has no codec or differs, the server's table is kept in
  :data:`_SERVER_TABLES` and registered as the codec ``binlake-<charset>``.  Spot-checked
  against MySQL's ``share/charsets/{cp866,greek}.xml`` (identical mappings).
* Multi-byte character sets: every 1- and 2-byte sequence (and 3-byte 0x8F.. for ujis/eucjpms)
  the server accepts was compared with the Python codec chosen in :data:`CODECS`; the comments
  there give the result.
"""

from __future__ import annotations

import codecs
from typing import Any, Final

__all__ = [
    "CODECS",
    "COLLATIONS",
    "MAX_BYTES_PER_CHAR",
    "MYSQL_COLLATION_NAMES",
    "charset_of",
    "codec_of",
    "collation_of",
    "decode_text",
    "max_bytes_per_char",
]

# ---------------------------------------------------------------------------------------------
# Generated data (see the module docstring).
# ---------------------------------------------------------------------------------------------

COLLATIONS: dict[int, tuple[str, str]] = {
    # no comment: MariaDB 10.11 information_schema; MySQL uses ids 1-247 the same way (same charset)
    1: ("big5_chinese_ci", "big5"),
    2: ("latin2_czech_cs", "latin2"),
    3: ("dec8_swedish_ci", "dec8"),
    4: ("cp850_general_ci", "cp850"),
    5: ("latin1_german1_ci", "latin1"),
    6: ("hp8_english_ci", "hp8"),
    7: ("koi8r_general_ci", "koi8r"),
    8: ("latin1_swedish_ci", "latin1"),
    9: ("latin2_general_ci", "latin2"),
    10: ("swe7_swedish_ci", "swe7"),
    11: ("ascii_general_ci", "ascii"),
    12: ("ujis_japanese_ci", "ujis"),
    13: ("sjis_japanese_ci", "sjis"),
    14: ("cp1251_bulgarian_ci", "cp1251"),
    15: ("latin1_danish_ci", "latin1"),
    16: ("hebrew_general_ci", "hebrew"),
    18: ("tis620_thai_ci", "tis620"),
    19: ("euckr_korean_ci", "euckr"),
    20: ("latin7_estonian_cs", "latin7"),
    21: ("latin2_hungarian_ci", "latin2"),
    22: ("koi8u_general_ci", "koi8u"),
    23: ("cp1251_ukrainian_ci", "cp1251"),
    24: ("gb2312_chinese_ci", "gb2312"),
    25: ("greek_general_ci", "greek"),
    26: ("cp1250_general_ci", "cp1250"),
    27: ("latin2_croatian_ci", "latin2"),
    28: ("gbk_chinese_ci", "gbk"),
    29: ("cp1257_lithuanian_ci", "cp1257"),
    30: ("latin5_turkish_ci", "latin5"),
    31: ("latin1_german2_ci", "latin1"),
    32: ("armscii8_general_ci", "armscii8"),
    33: ("utf8mb3_general_ci", "utf8mb3"),
    34: ("cp1250_czech_cs", "cp1250"),
    35: ("ucs2_general_ci", "ucs2"),
    36: ("cp866_general_ci", "cp866"),
    37: ("keybcs2_general_ci", "keybcs2"),
    38: ("macce_general_ci", "macce"),
    39: ("macroman_general_ci", "macroman"),
    40: ("cp852_general_ci", "cp852"),
    41: ("latin7_general_ci", "latin7"),
    42: ("latin7_general_cs", "latin7"),
    43: ("macce_bin", "macce"),
    44: ("cp1250_croatian_ci", "cp1250"),
    45: ("utf8mb4_general_ci", "utf8mb4"),
    46: ("utf8mb4_bin", "utf8mb4"),
    47: ("latin1_bin", "latin1"),
    48: ("latin1_general_ci", "latin1"),
    49: ("latin1_general_cs", "latin1"),
    50: ("cp1251_bin", "cp1251"),
    51: ("cp1251_general_ci", "cp1251"),
    52: ("cp1251_general_cs", "cp1251"),
    53: ("macroman_bin", "macroman"),
    54: ("utf16_general_ci", "utf16"),
    55: ("utf16_bin", "utf16"),
    56: ("utf16le_general_ci", "utf16le"),
    57: ("cp1256_general_ci", "cp1256"),
    58: ("cp1257_bin", "cp1257"),
    59: ("cp1257_general_ci", "cp1257"),
    60: ("utf32_general_ci", "utf32"),
    61: ("utf32_bin", "utf32"),
    62: ("utf16le_bin", "utf16le"),
    63: ("binary", "binary"),
    64: ("armscii8_bin", "armscii8"),
    65: ("ascii_bin", "ascii"),
    66: ("cp1250_bin", "cp1250"),
    67: ("cp1256_bin", "cp1256"),
    68: ("cp866_bin", "cp866"),
    69: ("dec8_bin", "dec8"),
    70: ("greek_bin", "greek"),
    71: ("hebrew_bin", "hebrew"),
    72: ("hp8_bin", "hp8"),
    73: ("keybcs2_bin", "keybcs2"),
    74: ("koi8r_bin", "koi8r"),
    75: ("koi8u_bin", "koi8u"),
    76: ("utf8mb3_tolower_ci", "utf8mb3"),  # MySQL only
    77: ("latin2_bin", "latin2"),
    78: ("latin5_bin", "latin5"),
    79: ("latin7_bin", "latin7"),
    80: ("cp850_bin", "cp850"),
    81: ("cp852_bin", "cp852"),
    82: ("swe7_bin", "swe7"),
    83: ("utf8mb3_bin", "utf8mb3"),
    84: ("big5_bin", "big5"),
    85: ("euckr_bin", "euckr"),
    86: ("gb2312_bin", "gb2312"),
    87: ("gbk_bin", "gbk"),
    88: ("sjis_bin", "sjis"),
    89: ("tis620_bin", "tis620"),
    90: ("ucs2_bin", "ucs2"),
    91: ("ujis_bin", "ujis"),
    92: ("geostd8_general_ci", "geostd8"),
    93: ("geostd8_bin", "geostd8"),
    94: ("latin1_spanish_ci", "latin1"),
    95: ("cp932_japanese_ci", "cp932"),
    96: ("cp932_bin", "cp932"),
    97: ("eucjpms_japanese_ci", "eucjpms"),
    98: ("eucjpms_bin", "eucjpms"),
    99: ("cp1250_polish_ci", "cp1250"),
    101: ("utf16_unicode_ci", "utf16"),
    102: ("utf16_icelandic_ci", "utf16"),
    103: ("utf16_latvian_ci", "utf16"),
    104: ("utf16_romanian_ci", "utf16"),
    105: ("utf16_slovenian_ci", "utf16"),
    106: ("utf16_polish_ci", "utf16"),
    107: ("utf16_estonian_ci", "utf16"),
    108: ("utf16_spanish_ci", "utf16"),
    109: ("utf16_swedish_ci", "utf16"),
    110: ("utf16_turkish_ci", "utf16"),
    111: ("utf16_czech_ci", "utf16"),
    112: ("utf16_danish_ci", "utf16"),
    113: ("utf16_lithuanian_ci", "utf16"),
    114: ("utf16_slovak_ci", "utf16"),
    115: ("utf16_spanish2_ci", "utf16"),
    116: ("utf16_roman_ci", "utf16"),
    117: ("utf16_persian_ci", "utf16"),
    118: ("utf16_esperanto_ci", "utf16"),
    119: ("utf16_hungarian_ci", "utf16"),
    120: ("utf16_sinhala_ci", "utf16"),
    121: ("utf16_german2_ci", "utf16"),
    122: ("utf16_croatian_mysql561_ci", "utf16"),
    123: ("utf16_unicode_520_ci", "utf16"),
    124: ("utf16_vietnamese_ci", "utf16"),
    128: ("ucs2_unicode_ci", "ucs2"),
    129: ("ucs2_icelandic_ci", "ucs2"),
    130: ("ucs2_latvian_ci", "ucs2"),
    131: ("ucs2_romanian_ci", "ucs2"),
    132: ("ucs2_slovenian_ci", "ucs2"),
    133: ("ucs2_polish_ci", "ucs2"),
    134: ("ucs2_estonian_ci", "ucs2"),
    135: ("ucs2_spanish_ci", "ucs2"),
    136: ("ucs2_swedish_ci", "ucs2"),
    137: ("ucs2_turkish_ci", "ucs2"),
    138: ("ucs2_czech_ci", "ucs2"),
    139: ("ucs2_danish_ci", "ucs2"),
    140: ("ucs2_lithuanian_ci", "ucs2"),
    141: ("ucs2_slovak_ci", "ucs2"),
    142: ("ucs2_spanish2_ci", "ucs2"),
    143: ("ucs2_roman_ci", "ucs2"),
    144: ("ucs2_persian_ci", "ucs2"),
    145: ("ucs2_esperanto_ci", "ucs2"),
    146: ("ucs2_hungarian_ci", "ucs2"),
    147: ("ucs2_sinhala_ci", "ucs2"),
    148: ("ucs2_german2_ci", "ucs2"),
    149: ("ucs2_croatian_mysql561_ci", "ucs2"),
    150: ("ucs2_unicode_520_ci", "ucs2"),
    151: ("ucs2_vietnamese_ci", "ucs2"),
    159: ("ucs2_general_mysql500_ci", "ucs2"),
    160: ("utf32_unicode_ci", "utf32"),
    161: ("utf32_icelandic_ci", "utf32"),
    162: ("utf32_latvian_ci", "utf32"),
    163: ("utf32_romanian_ci", "utf32"),
    164: ("utf32_slovenian_ci", "utf32"),
    165: ("utf32_polish_ci", "utf32"),
    166: ("utf32_estonian_ci", "utf32"),
    167: ("utf32_spanish_ci", "utf32"),
    168: ("utf32_swedish_ci", "utf32"),
    169: ("utf32_turkish_ci", "utf32"),
    170: ("utf32_czech_ci", "utf32"),
    171: ("utf32_danish_ci", "utf32"),
    172: ("utf32_lithuanian_ci", "utf32"),
    173: ("utf32_slovak_ci", "utf32"),
    174: ("utf32_spanish2_ci", "utf32"),
    175: ("utf32_roman_ci", "utf32"),
    176: ("utf32_persian_ci", "utf32"),
    177: ("utf32_esperanto_ci", "utf32"),
    178: ("utf32_hungarian_ci", "utf32"),
    179: ("utf32_sinhala_ci", "utf32"),
    180: ("utf32_german2_ci", "utf32"),
    181: ("utf32_croatian_mysql561_ci", "utf32"),
    182: ("utf32_unicode_520_ci", "utf32"),
    183: ("utf32_vietnamese_ci", "utf32"),
    192: ("utf8mb3_unicode_ci", "utf8mb3"),
    193: ("utf8mb3_icelandic_ci", "utf8mb3"),
    194: ("utf8mb3_latvian_ci", "utf8mb3"),
    195: ("utf8mb3_romanian_ci", "utf8mb3"),
    196: ("utf8mb3_slovenian_ci", "utf8mb3"),
    197: ("utf8mb3_polish_ci", "utf8mb3"),
    198: ("utf8mb3_estonian_ci", "utf8mb3"),
    199: ("utf8mb3_spanish_ci", "utf8mb3"),
    200: ("utf8mb3_swedish_ci", "utf8mb3"),
    201: ("utf8mb3_turkish_ci", "utf8mb3"),
    202: ("utf8mb3_czech_ci", "utf8mb3"),
    203: ("utf8mb3_danish_ci", "utf8mb3"),
    204: ("utf8mb3_lithuanian_ci", "utf8mb3"),
    205: ("utf8mb3_slovak_ci", "utf8mb3"),
    206: ("utf8mb3_spanish2_ci", "utf8mb3"),
    207: ("utf8mb3_roman_ci", "utf8mb3"),
    208: ("utf8mb3_persian_ci", "utf8mb3"),
    209: ("utf8mb3_esperanto_ci", "utf8mb3"),
    210: ("utf8mb3_hungarian_ci", "utf8mb3"),
    211: ("utf8mb3_sinhala_ci", "utf8mb3"),
    212: ("utf8mb3_german2_ci", "utf8mb3"),
    213: ("utf8mb3_croatian_mysql561_ci", "utf8mb3"),
    214: ("utf8mb3_unicode_520_ci", "utf8mb3"),
    215: ("utf8mb3_vietnamese_ci", "utf8mb3"),
    223: ("utf8mb3_general_mysql500_ci", "utf8mb3"),
    224: ("utf8mb4_unicode_ci", "utf8mb4"),
    225: ("utf8mb4_icelandic_ci", "utf8mb4"),
    226: ("utf8mb4_latvian_ci", "utf8mb4"),
    227: ("utf8mb4_romanian_ci", "utf8mb4"),
    228: ("utf8mb4_slovenian_ci", "utf8mb4"),
    229: ("utf8mb4_polish_ci", "utf8mb4"),
    230: ("utf8mb4_estonian_ci", "utf8mb4"),
    231: ("utf8mb4_spanish_ci", "utf8mb4"),
    232: ("utf8mb4_swedish_ci", "utf8mb4"),
    233: ("utf8mb4_turkish_ci", "utf8mb4"),
    234: ("utf8mb4_czech_ci", "utf8mb4"),
    235: ("utf8mb4_danish_ci", "utf8mb4"),
    236: ("utf8mb4_lithuanian_ci", "utf8mb4"),
    237: ("utf8mb4_slovak_ci", "utf8mb4"),
    238: ("utf8mb4_spanish2_ci", "utf8mb4"),
    239: ("utf8mb4_roman_ci", "utf8mb4"),
    240: ("utf8mb4_persian_ci", "utf8mb4"),
    241: ("utf8mb4_esperanto_ci", "utf8mb4"),
    242: ("utf8mb4_hungarian_ci", "utf8mb4"),
    243: ("utf8mb4_sinhala_ci", "utf8mb4"),
    244: ("utf8mb4_german2_ci", "utf8mb4"),
    245: ("utf8mb4_croatian_mysql561_ci", "utf8mb4"),
    246: ("utf8mb4_unicode_520_ci", "utf8mb4"),
    247: ("utf8mb4_vietnamese_ci", "utf8mb4"),
    248: ("gb18030_chinese_ci", "gb18030"),  # MySQL only
    249: ("gb18030_bin", "gb18030"),  # MySQL only
    250: ("gb18030_unicode_520_ci", "gb18030"),  # MySQL only
    255: ("utf8mb4_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    256: ("utf8mb4_de_pb_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    257: ("utf8mb4_is_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    258: ("utf8mb4_lv_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    259: ("utf8mb4_ro_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    260: ("utf8mb4_sl_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    261: ("utf8mb4_pl_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    262: ("utf8mb4_et_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    263: ("utf8mb4_es_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    264: ("utf8mb4_sv_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    265: ("utf8mb4_tr_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    266: ("utf8mb4_cs_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    267: ("utf8mb4_da_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    268: ("utf8mb4_lt_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    269: ("utf8mb4_sk_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    270: ("utf8mb4_es_trad_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    271: ("utf8mb4_la_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    273: ("utf8mb4_eo_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    274: ("utf8mb4_hu_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    275: ("utf8mb4_hr_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    277: ("utf8mb4_vi_0900_ai_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    278: ("utf8mb4_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    279: ("utf8mb4_de_pb_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    280: ("utf8mb4_is_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    281: ("utf8mb4_lv_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    282: ("utf8mb4_ro_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    283: ("utf8mb4_sl_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    284: ("utf8mb4_pl_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    285: ("utf8mb4_et_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    286: ("utf8mb4_es_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    287: ("utf8mb4_sv_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    288: ("utf8mb4_tr_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    289: ("utf8mb4_cs_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    290: ("utf8mb4_da_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    291: ("utf8mb4_lt_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    292: ("utf8mb4_sk_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    293: ("utf8mb4_es_trad_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    294: ("utf8mb4_la_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    296: ("utf8mb4_eo_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    297: ("utf8mb4_hu_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    298: ("utf8mb4_hr_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    300: ("utf8mb4_vi_0900_as_cs", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    303: ("utf8mb4_ja_0900_as_cs", "utf8mb4"),  # MySQL only
    304: ("utf8mb4_ja_0900_as_cs_ks", "utf8mb4"),  # MySQL only
    305: ("utf8mb4_0900_as_ci", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    306: ("utf8mb4_ru_0900_ai_ci", "utf8mb4"),  # MySQL only
    307: ("utf8mb4_ru_0900_as_cs", "utf8mb4"),  # MySQL only
    308: ("utf8mb4_zh_0900_as_cs", "utf8mb4"),  # MySQL only
    309: ("utf8mb4_0900_bin", "utf8mb4"),  # MySQL; MariaDB 11.4.5+ alias
    310: ("utf8mb4_nb_0900_ai_ci", "utf8mb4"),  # MySQL only
    311: ("utf8mb4_nb_0900_as_cs", "utf8mb4"),  # MySQL only
    312: ("utf8mb4_nn_0900_ai_ci", "utf8mb4"),  # MySQL only
    313: ("utf8mb4_nn_0900_as_cs", "utf8mb4"),  # MySQL only
    314: ("utf8mb4_sr_latn_0900_ai_ci", "utf8mb4"),  # MySQL only
    315: ("utf8mb4_sr_latn_0900_as_cs", "utf8mb4"),  # MySQL only
    316: ("utf8mb4_bs_0900_ai_ci", "utf8mb4"),  # MySQL only
    317: ("utf8mb4_bs_0900_as_cs", "utf8mb4"),  # MySQL only
    318: ("utf8mb4_bg_0900_ai_ci", "utf8mb4"),  # MySQL only
    319: ("utf8mb4_bg_0900_as_cs", "utf8mb4"),  # MySQL only
    320: ("utf8mb4_gl_0900_ai_ci", "utf8mb4"),  # MySQL only
    321: ("utf8mb4_gl_0900_as_cs", "utf8mb4"),  # MySQL only
    322: ("utf8mb4_mn_cyrl_0900_ai_ci", "utf8mb4"),  # MySQL only
    323: ("utf8mb4_mn_cyrl_0900_as_cs", "utf8mb4"),  # MySQL only
    576: ("utf8mb3_croatian_ci", "utf8mb3"),
    577: ("utf8mb3_myanmar_ci", "utf8mb3"),
    578: ("utf8mb3_thai_520_w2", "utf8mb3"),
    608: ("utf8mb4_croatian_ci", "utf8mb4"),
    609: ("utf8mb4_myanmar_ci", "utf8mb4"),
    610: ("utf8mb4_thai_520_w2", "utf8mb4"),
    640: ("ucs2_croatian_ci", "ucs2"),
    641: ("ucs2_myanmar_ci", "ucs2"),
    642: ("ucs2_thai_520_w2", "ucs2"),
    672: ("utf16_croatian_ci", "utf16"),
    673: ("utf16_myanmar_ci", "utf16"),
    674: ("utf16_thai_520_w2", "utf16"),
    736: ("utf32_croatian_ci", "utf32"),
    737: ("utf32_myanmar_ci", "utf32"),
    738: ("utf32_thai_520_w2", "utf32"),
    1025: ("big5_chinese_nopad_ci", "big5"),
    1027: ("dec8_swedish_nopad_ci", "dec8"),
    1028: ("cp850_general_nopad_ci", "cp850"),
    1030: ("hp8_english_nopad_ci", "hp8"),
    1031: ("koi8r_general_nopad_ci", "koi8r"),
    1032: ("latin1_swedish_nopad_ci", "latin1"),
    1033: ("latin2_general_nopad_ci", "latin2"),
    1034: ("swe7_swedish_nopad_ci", "swe7"),
    1035: ("ascii_general_nopad_ci", "ascii"),
    1036: ("ujis_japanese_nopad_ci", "ujis"),
    1037: ("sjis_japanese_nopad_ci", "sjis"),
    1040: ("hebrew_general_nopad_ci", "hebrew"),
    1042: ("tis620_thai_nopad_ci", "tis620"),
    1043: ("euckr_korean_nopad_ci", "euckr"),
    1046: ("koi8u_general_nopad_ci", "koi8u"),
    1048: ("gb2312_chinese_nopad_ci", "gb2312"),
    1049: ("greek_general_nopad_ci", "greek"),
    1050: ("cp1250_general_nopad_ci", "cp1250"),
    1052: ("gbk_chinese_nopad_ci", "gbk"),
    1054: ("latin5_turkish_nopad_ci", "latin5"),
    1056: ("armscii8_general_nopad_ci", "armscii8"),
    1057: ("utf8mb3_general_nopad_ci", "utf8mb3"),
    1059: ("ucs2_general_nopad_ci", "ucs2"),
    1060: ("cp866_general_nopad_ci", "cp866"),
    1061: ("keybcs2_general_nopad_ci", "keybcs2"),
    1062: ("macce_general_nopad_ci", "macce"),
    1063: ("macroman_general_nopad_ci", "macroman"),
    1064: ("cp852_general_nopad_ci", "cp852"),
    1065: ("latin7_general_nopad_ci", "latin7"),
    1067: ("macce_nopad_bin", "macce"),
    1069: ("utf8mb4_general_nopad_ci", "utf8mb4"),
    1070: ("utf8mb4_nopad_bin", "utf8mb4"),
    1071: ("latin1_nopad_bin", "latin1"),
    1074: ("cp1251_nopad_bin", "cp1251"),
    1075: ("cp1251_general_nopad_ci", "cp1251"),
    1077: ("macroman_nopad_bin", "macroman"),
    1078: ("utf16_general_nopad_ci", "utf16"),
    1079: ("utf16_nopad_bin", "utf16"),
    1080: ("utf16le_general_nopad_ci", "utf16le"),
    1081: ("cp1256_general_nopad_ci", "cp1256"),
    1082: ("cp1257_nopad_bin", "cp1257"),
    1083: ("cp1257_general_nopad_ci", "cp1257"),
    1084: ("utf32_general_nopad_ci", "utf32"),
    1085: ("utf32_nopad_bin", "utf32"),
    1086: ("utf16le_nopad_bin", "utf16le"),
    1088: ("armscii8_nopad_bin", "armscii8"),
    1089: ("ascii_nopad_bin", "ascii"),
    1090: ("cp1250_nopad_bin", "cp1250"),
    1091: ("cp1256_nopad_bin", "cp1256"),
    1092: ("cp866_nopad_bin", "cp866"),
    1093: ("dec8_nopad_bin", "dec8"),
    1094: ("greek_nopad_bin", "greek"),
    1095: ("hebrew_nopad_bin", "hebrew"),
    1096: ("hp8_nopad_bin", "hp8"),
    1097: ("keybcs2_nopad_bin", "keybcs2"),
    1098: ("koi8r_nopad_bin", "koi8r"),
    1099: ("koi8u_nopad_bin", "koi8u"),
    1101: ("latin2_nopad_bin", "latin2"),
    1102: ("latin5_nopad_bin", "latin5"),
    1103: ("latin7_nopad_bin", "latin7"),
    1104: ("cp850_nopad_bin", "cp850"),
    1105: ("cp852_nopad_bin", "cp852"),
    1106: ("swe7_nopad_bin", "swe7"),
    1107: ("utf8mb3_nopad_bin", "utf8mb3"),
    1108: ("big5_nopad_bin", "big5"),
    1109: ("euckr_nopad_bin", "euckr"),
    1110: ("gb2312_nopad_bin", "gb2312"),
    1111: ("gbk_nopad_bin", "gbk"),
    1112: ("sjis_nopad_bin", "sjis"),
    1113: ("tis620_nopad_bin", "tis620"),
    1114: ("ucs2_nopad_bin", "ucs2"),
    1115: ("ujis_nopad_bin", "ujis"),
    1116: ("geostd8_general_nopad_ci", "geostd8"),
    1117: ("geostd8_nopad_bin", "geostd8"),
    1119: ("cp932_japanese_nopad_ci", "cp932"),
    1120: ("cp932_nopad_bin", "cp932"),
    1121: ("eucjpms_japanese_nopad_ci", "eucjpms"),
    1122: ("eucjpms_nopad_bin", "eucjpms"),
    1125: ("utf16_unicode_nopad_ci", "utf16"),
    1147: ("utf16_unicode_520_nopad_ci", "utf16"),
    1152: ("ucs2_unicode_nopad_ci", "ucs2"),
    1174: ("ucs2_unicode_520_nopad_ci", "ucs2"),
    1184: ("utf32_unicode_nopad_ci", "utf32"),
    1206: ("utf32_unicode_520_nopad_ci", "utf32"),
    1216: ("utf8mb3_unicode_nopad_ci", "utf8mb3"),
    1238: ("utf8mb3_unicode_520_nopad_ci", "utf8mb3"),
    1248: ("utf8mb4_unicode_nopad_ci", "utf8mb4"),
    1270: ("utf8mb4_unicode_520_nopad_ci", "utf8mb4"),
    # MariaDB 10.10+ UCA-14.0.0 collations (COLLATION_CHARACTER_SET_APPLICABILITY)
    2048: ("utf8mb3_uca1400_ai_ci", "utf8mb3"),
    2049: ("utf8mb3_uca1400_ai_cs", "utf8mb3"),
    2050: ("utf8mb3_uca1400_as_ci", "utf8mb3"),
    2051: ("utf8mb3_uca1400_as_cs", "utf8mb3"),
    2052: ("utf8mb3_uca1400_nopad_ai_ci", "utf8mb3"),
    2053: ("utf8mb3_uca1400_nopad_ai_cs", "utf8mb3"),
    2054: ("utf8mb3_uca1400_nopad_as_ci", "utf8mb3"),
    2055: ("utf8mb3_uca1400_nopad_as_cs", "utf8mb3"),
    2056: ("utf8mb3_uca1400_icelandic_ai_ci", "utf8mb3"),
    2057: ("utf8mb3_uca1400_icelandic_ai_cs", "utf8mb3"),
    2058: ("utf8mb3_uca1400_icelandic_as_ci", "utf8mb3"),
    2059: ("utf8mb3_uca1400_icelandic_as_cs", "utf8mb3"),
    2060: ("utf8mb3_uca1400_icelandic_nopad_ai_ci", "utf8mb3"),
    2061: ("utf8mb3_uca1400_icelandic_nopad_ai_cs", "utf8mb3"),
    2062: ("utf8mb3_uca1400_icelandic_nopad_as_ci", "utf8mb3"),
    2063: ("utf8mb3_uca1400_icelandic_nopad_as_cs", "utf8mb3"),
    2064: ("utf8mb3_uca1400_latvian_ai_ci", "utf8mb3"),
    2065: ("utf8mb3_uca1400_latvian_ai_cs", "utf8mb3"),
    2066: ("utf8mb3_uca1400_latvian_as_ci", "utf8mb3"),
    2067: ("utf8mb3_uca1400_latvian_as_cs", "utf8mb3"),
    2068: ("utf8mb3_uca1400_latvian_nopad_ai_ci", "utf8mb3"),
    2069: ("utf8mb3_uca1400_latvian_nopad_ai_cs", "utf8mb3"),
    2070: ("utf8mb3_uca1400_latvian_nopad_as_ci", "utf8mb3"),
    2071: ("utf8mb3_uca1400_latvian_nopad_as_cs", "utf8mb3"),
    2072: ("utf8mb3_uca1400_romanian_ai_ci", "utf8mb3"),
    2073: ("utf8mb3_uca1400_romanian_ai_cs", "utf8mb3"),
    2074: ("utf8mb3_uca1400_romanian_as_ci", "utf8mb3"),
    2075: ("utf8mb3_uca1400_romanian_as_cs", "utf8mb3"),
    2076: ("utf8mb3_uca1400_romanian_nopad_ai_ci", "utf8mb3"),
    2077: ("utf8mb3_uca1400_romanian_nopad_ai_cs", "utf8mb3"),
    2078: ("utf8mb3_uca1400_romanian_nopad_as_ci", "utf8mb3"),
    2079: ("utf8mb3_uca1400_romanian_nopad_as_cs", "utf8mb3"),
    2080: ("utf8mb3_uca1400_slovenian_ai_ci", "utf8mb3"),
    2081: ("utf8mb3_uca1400_slovenian_ai_cs", "utf8mb3"),
    2082: ("utf8mb3_uca1400_slovenian_as_ci", "utf8mb3"),
    2083: ("utf8mb3_uca1400_slovenian_as_cs", "utf8mb3"),
    2084: ("utf8mb3_uca1400_slovenian_nopad_ai_ci", "utf8mb3"),
    2085: ("utf8mb3_uca1400_slovenian_nopad_ai_cs", "utf8mb3"),
    2086: ("utf8mb3_uca1400_slovenian_nopad_as_ci", "utf8mb3"),
    2087: ("utf8mb3_uca1400_slovenian_nopad_as_cs", "utf8mb3"),
    2088: ("utf8mb3_uca1400_polish_ai_ci", "utf8mb3"),
    2089: ("utf8mb3_uca1400_polish_ai_cs", "utf8mb3"),
    2090: ("utf8mb3_uca1400_polish_as_ci", "utf8mb3"),
    2091: ("utf8mb3_uca1400_polish_as_cs", "utf8mb3"),
    2092: ("utf8mb3_uca1400_polish_nopad_ai_ci", "utf8mb3"),
    2093: ("utf8mb3_uca1400_polish_nopad_ai_cs", "utf8mb3"),
    2094: ("utf8mb3_uca1400_polish_nopad_as_ci", "utf8mb3"),
    2095: ("utf8mb3_uca1400_polish_nopad_as_cs", "utf8mb3"),
    2096: ("utf8mb3_uca1400_estonian_ai_ci", "utf8mb3"),
    2097: ("utf8mb3_uca1400_estonian_ai_cs", "utf8mb3"),
    2098: ("utf8mb3_uca1400_estonian_as_ci", "utf8mb3"),
    2099: ("utf8mb3_uca1400_estonian_as_cs", "utf8mb3"),
    2100: ("utf8mb3_uca1400_estonian_nopad_ai_ci", "utf8mb3"),
    2101: ("utf8mb3_uca1400_estonian_nopad_ai_cs", "utf8mb3"),
    2102: ("utf8mb3_uca1400_estonian_nopad_as_ci", "utf8mb3"),
    2103: ("utf8mb3_uca1400_estonian_nopad_as_cs", "utf8mb3"),
    2104: ("utf8mb3_uca1400_spanish_ai_ci", "utf8mb3"),
    2105: ("utf8mb3_uca1400_spanish_ai_cs", "utf8mb3"),
    2106: ("utf8mb3_uca1400_spanish_as_ci", "utf8mb3"),
    2107: ("utf8mb3_uca1400_spanish_as_cs", "utf8mb3"),
    2108: ("utf8mb3_uca1400_spanish_nopad_ai_ci", "utf8mb3"),
    2109: ("utf8mb3_uca1400_spanish_nopad_ai_cs", "utf8mb3"),
    2110: ("utf8mb3_uca1400_spanish_nopad_as_ci", "utf8mb3"),
    2111: ("utf8mb3_uca1400_spanish_nopad_as_cs", "utf8mb3"),
    2112: ("utf8mb3_uca1400_swedish_ai_ci", "utf8mb3"),
    2113: ("utf8mb3_uca1400_swedish_ai_cs", "utf8mb3"),
    2114: ("utf8mb3_uca1400_swedish_as_ci", "utf8mb3"),
    2115: ("utf8mb3_uca1400_swedish_as_cs", "utf8mb3"),
    2116: ("utf8mb3_uca1400_swedish_nopad_ai_ci", "utf8mb3"),
    2117: ("utf8mb3_uca1400_swedish_nopad_ai_cs", "utf8mb3"),
    2118: ("utf8mb3_uca1400_swedish_nopad_as_ci", "utf8mb3"),
    2119: ("utf8mb3_uca1400_swedish_nopad_as_cs", "utf8mb3"),
    2120: ("utf8mb3_uca1400_turkish_ai_ci", "utf8mb3"),
    2121: ("utf8mb3_uca1400_turkish_ai_cs", "utf8mb3"),
    2122: ("utf8mb3_uca1400_turkish_as_ci", "utf8mb3"),
    2123: ("utf8mb3_uca1400_turkish_as_cs", "utf8mb3"),
    2124: ("utf8mb3_uca1400_turkish_nopad_ai_ci", "utf8mb3"),
    2125: ("utf8mb3_uca1400_turkish_nopad_ai_cs", "utf8mb3"),
    2126: ("utf8mb3_uca1400_turkish_nopad_as_ci", "utf8mb3"),
    2127: ("utf8mb3_uca1400_turkish_nopad_as_cs", "utf8mb3"),
    2128: ("utf8mb3_uca1400_czech_ai_ci", "utf8mb3"),
    2129: ("utf8mb3_uca1400_czech_ai_cs", "utf8mb3"),
    2130: ("utf8mb3_uca1400_czech_as_ci", "utf8mb3"),
    2131: ("utf8mb3_uca1400_czech_as_cs", "utf8mb3"),
    2132: ("utf8mb3_uca1400_czech_nopad_ai_ci", "utf8mb3"),
    2133: ("utf8mb3_uca1400_czech_nopad_ai_cs", "utf8mb3"),
    2134: ("utf8mb3_uca1400_czech_nopad_as_ci", "utf8mb3"),
    2135: ("utf8mb3_uca1400_czech_nopad_as_cs", "utf8mb3"),
    2136: ("utf8mb3_uca1400_danish_ai_ci", "utf8mb3"),
    2137: ("utf8mb3_uca1400_danish_ai_cs", "utf8mb3"),
    2138: ("utf8mb3_uca1400_danish_as_ci", "utf8mb3"),
    2139: ("utf8mb3_uca1400_danish_as_cs", "utf8mb3"),
    2140: ("utf8mb3_uca1400_danish_nopad_ai_ci", "utf8mb3"),
    2141: ("utf8mb3_uca1400_danish_nopad_ai_cs", "utf8mb3"),
    2142: ("utf8mb3_uca1400_danish_nopad_as_ci", "utf8mb3"),
    2143: ("utf8mb3_uca1400_danish_nopad_as_cs", "utf8mb3"),
    2144: ("utf8mb3_uca1400_lithuanian_ai_ci", "utf8mb3"),
    2145: ("utf8mb3_uca1400_lithuanian_ai_cs", "utf8mb3"),
    2146: ("utf8mb3_uca1400_lithuanian_as_ci", "utf8mb3"),
    2147: ("utf8mb3_uca1400_lithuanian_as_cs", "utf8mb3"),
    2148: ("utf8mb3_uca1400_lithuanian_nopad_ai_ci", "utf8mb3"),
    2149: ("utf8mb3_uca1400_lithuanian_nopad_ai_cs", "utf8mb3"),
    2150: ("utf8mb3_uca1400_lithuanian_nopad_as_ci", "utf8mb3"),
    2151: ("utf8mb3_uca1400_lithuanian_nopad_as_cs", "utf8mb3"),
    2152: ("utf8mb3_uca1400_slovak_ai_ci", "utf8mb3"),
    2153: ("utf8mb3_uca1400_slovak_ai_cs", "utf8mb3"),
    2154: ("utf8mb3_uca1400_slovak_as_ci", "utf8mb3"),
    2155: ("utf8mb3_uca1400_slovak_as_cs", "utf8mb3"),
    2156: ("utf8mb3_uca1400_slovak_nopad_ai_ci", "utf8mb3"),
    2157: ("utf8mb3_uca1400_slovak_nopad_ai_cs", "utf8mb3"),
    2158: ("utf8mb3_uca1400_slovak_nopad_as_ci", "utf8mb3"),
    2159: ("utf8mb3_uca1400_slovak_nopad_as_cs", "utf8mb3"),
    2160: ("utf8mb3_uca1400_spanish2_ai_ci", "utf8mb3"),
    2161: ("utf8mb3_uca1400_spanish2_ai_cs", "utf8mb3"),
    2162: ("utf8mb3_uca1400_spanish2_as_ci", "utf8mb3"),
    2163: ("utf8mb3_uca1400_spanish2_as_cs", "utf8mb3"),
    2164: ("utf8mb3_uca1400_spanish2_nopad_ai_ci", "utf8mb3"),
    2165: ("utf8mb3_uca1400_spanish2_nopad_ai_cs", "utf8mb3"),
    2166: ("utf8mb3_uca1400_spanish2_nopad_as_ci", "utf8mb3"),
    2167: ("utf8mb3_uca1400_spanish2_nopad_as_cs", "utf8mb3"),
    2168: ("utf8mb3_uca1400_roman_ai_ci", "utf8mb3"),
    2169: ("utf8mb3_uca1400_roman_ai_cs", "utf8mb3"),
    2170: ("utf8mb3_uca1400_roman_as_ci", "utf8mb3"),
    2171: ("utf8mb3_uca1400_roman_as_cs", "utf8mb3"),
    2172: ("utf8mb3_uca1400_roman_nopad_ai_ci", "utf8mb3"),
    2173: ("utf8mb3_uca1400_roman_nopad_ai_cs", "utf8mb3"),
    2174: ("utf8mb3_uca1400_roman_nopad_as_ci", "utf8mb3"),
    2175: ("utf8mb3_uca1400_roman_nopad_as_cs", "utf8mb3"),
    2176: ("utf8mb3_uca1400_persian_ai_ci", "utf8mb3"),
    2177: ("utf8mb3_uca1400_persian_ai_cs", "utf8mb3"),
    2178: ("utf8mb3_uca1400_persian_as_ci", "utf8mb3"),
    2179: ("utf8mb3_uca1400_persian_as_cs", "utf8mb3"),
    2180: ("utf8mb3_uca1400_persian_nopad_ai_ci", "utf8mb3"),
    2181: ("utf8mb3_uca1400_persian_nopad_ai_cs", "utf8mb3"),
    2182: ("utf8mb3_uca1400_persian_nopad_as_ci", "utf8mb3"),
    2183: ("utf8mb3_uca1400_persian_nopad_as_cs", "utf8mb3"),
    2184: ("utf8mb3_uca1400_esperanto_ai_ci", "utf8mb3"),
    2185: ("utf8mb3_uca1400_esperanto_ai_cs", "utf8mb3"),
    2186: ("utf8mb3_uca1400_esperanto_as_ci", "utf8mb3"),
    2187: ("utf8mb3_uca1400_esperanto_as_cs", "utf8mb3"),
    2188: ("utf8mb3_uca1400_esperanto_nopad_ai_ci", "utf8mb3"),
    2189: ("utf8mb3_uca1400_esperanto_nopad_ai_cs", "utf8mb3"),
    2190: ("utf8mb3_uca1400_esperanto_nopad_as_ci", "utf8mb3"),
    2191: ("utf8mb3_uca1400_esperanto_nopad_as_cs", "utf8mb3"),
    2192: ("utf8mb3_uca1400_hungarian_ai_ci", "utf8mb3"),
    2193: ("utf8mb3_uca1400_hungarian_ai_cs", "utf8mb3"),
    2194: ("utf8mb3_uca1400_hungarian_as_ci", "utf8mb3"),
    2195: ("utf8mb3_uca1400_hungarian_as_cs", "utf8mb3"),
    2196: ("utf8mb3_uca1400_hungarian_nopad_ai_ci", "utf8mb3"),
    2197: ("utf8mb3_uca1400_hungarian_nopad_ai_cs", "utf8mb3"),
    2198: ("utf8mb3_uca1400_hungarian_nopad_as_ci", "utf8mb3"),
    2199: ("utf8mb3_uca1400_hungarian_nopad_as_cs", "utf8mb3"),
    2200: ("utf8mb3_uca1400_sinhala_ai_ci", "utf8mb3"),
    2201: ("utf8mb3_uca1400_sinhala_ai_cs", "utf8mb3"),
    2202: ("utf8mb3_uca1400_sinhala_as_ci", "utf8mb3"),
    2203: ("utf8mb3_uca1400_sinhala_as_cs", "utf8mb3"),
    2204: ("utf8mb3_uca1400_sinhala_nopad_ai_ci", "utf8mb3"),
    2205: ("utf8mb3_uca1400_sinhala_nopad_ai_cs", "utf8mb3"),
    2206: ("utf8mb3_uca1400_sinhala_nopad_as_ci", "utf8mb3"),
    2207: ("utf8mb3_uca1400_sinhala_nopad_as_cs", "utf8mb3"),
    2208: ("utf8mb3_uca1400_german2_ai_ci", "utf8mb3"),
    2209: ("utf8mb3_uca1400_german2_ai_cs", "utf8mb3"),
    2210: ("utf8mb3_uca1400_german2_as_ci", "utf8mb3"),
    2211: ("utf8mb3_uca1400_german2_as_cs", "utf8mb3"),
    2212: ("utf8mb3_uca1400_german2_nopad_ai_ci", "utf8mb3"),
    2213: ("utf8mb3_uca1400_german2_nopad_ai_cs", "utf8mb3"),
    2214: ("utf8mb3_uca1400_german2_nopad_as_ci", "utf8mb3"),
    2215: ("utf8mb3_uca1400_german2_nopad_as_cs", "utf8mb3"),
    2232: ("utf8mb3_uca1400_vietnamese_ai_ci", "utf8mb3"),
    2233: ("utf8mb3_uca1400_vietnamese_ai_cs", "utf8mb3"),
    2234: ("utf8mb3_uca1400_vietnamese_as_ci", "utf8mb3"),
    2235: ("utf8mb3_uca1400_vietnamese_as_cs", "utf8mb3"),
    2236: ("utf8mb3_uca1400_vietnamese_nopad_ai_ci", "utf8mb3"),
    2237: ("utf8mb3_uca1400_vietnamese_nopad_ai_cs", "utf8mb3"),
    2238: ("utf8mb3_uca1400_vietnamese_nopad_as_ci", "utf8mb3"),
    2239: ("utf8mb3_uca1400_vietnamese_nopad_as_cs", "utf8mb3"),
    2240: ("utf8mb3_uca1400_croatian_ai_ci", "utf8mb3"),
    2241: ("utf8mb3_uca1400_croatian_ai_cs", "utf8mb3"),
    2242: ("utf8mb3_uca1400_croatian_as_ci", "utf8mb3"),
    2243: ("utf8mb3_uca1400_croatian_as_cs", "utf8mb3"),
    2244: ("utf8mb3_uca1400_croatian_nopad_ai_ci", "utf8mb3"),
    2245: ("utf8mb3_uca1400_croatian_nopad_ai_cs", "utf8mb3"),
    2246: ("utf8mb3_uca1400_croatian_nopad_as_ci", "utf8mb3"),
    2247: ("utf8mb3_uca1400_croatian_nopad_as_cs", "utf8mb3"),
    2304: ("utf8mb4_uca1400_ai_ci", "utf8mb4"),
    2305: ("utf8mb4_uca1400_ai_cs", "utf8mb4"),
    2306: ("utf8mb4_uca1400_as_ci", "utf8mb4"),
    2307: ("utf8mb4_uca1400_as_cs", "utf8mb4"),
    2308: ("utf8mb4_uca1400_nopad_ai_ci", "utf8mb4"),
    2309: ("utf8mb4_uca1400_nopad_ai_cs", "utf8mb4"),
    2310: ("utf8mb4_uca1400_nopad_as_ci", "utf8mb4"),
    2311: ("utf8mb4_uca1400_nopad_as_cs", "utf8mb4"),
    2312: ("utf8mb4_uca1400_icelandic_ai_ci", "utf8mb4"),
    2313: ("utf8mb4_uca1400_icelandic_ai_cs", "utf8mb4"),
    2314: ("utf8mb4_uca1400_icelandic_as_ci", "utf8mb4"),
    2315: ("utf8mb4_uca1400_icelandic_as_cs", "utf8mb4"),
    2316: ("utf8mb4_uca1400_icelandic_nopad_ai_ci", "utf8mb4"),
    2317: ("utf8mb4_uca1400_icelandic_nopad_ai_cs", "utf8mb4"),
    2318: ("utf8mb4_uca1400_icelandic_nopad_as_ci", "utf8mb4"),
    2319: ("utf8mb4_uca1400_icelandic_nopad_as_cs", "utf8mb4"),
    2320: ("utf8mb4_uca1400_latvian_ai_ci", "utf8mb4"),
    2321: ("utf8mb4_uca1400_latvian_ai_cs", "utf8mb4"),
    2322: ("utf8mb4_uca1400_latvian_as_ci", "utf8mb4"),
    2323: ("utf8mb4_uca1400_latvian_as_cs", "utf8mb4"),
    2324: ("utf8mb4_uca1400_latvian_nopad_ai_ci", "utf8mb4"),
    2325: ("utf8mb4_uca1400_latvian_nopad_ai_cs", "utf8mb4"),
    2326: ("utf8mb4_uca1400_latvian_nopad_as_ci", "utf8mb4"),
    2327: ("utf8mb4_uca1400_latvian_nopad_as_cs", "utf8mb4"),
    2328: ("utf8mb4_uca1400_romanian_ai_ci", "utf8mb4"),
    2329: ("utf8mb4_uca1400_romanian_ai_cs", "utf8mb4"),
    2330: ("utf8mb4_uca1400_romanian_as_ci", "utf8mb4"),
    2331: ("utf8mb4_uca1400_romanian_as_cs", "utf8mb4"),
    2332: ("utf8mb4_uca1400_romanian_nopad_ai_ci", "utf8mb4"),
    2333: ("utf8mb4_uca1400_romanian_nopad_ai_cs", "utf8mb4"),
    2334: ("utf8mb4_uca1400_romanian_nopad_as_ci", "utf8mb4"),
    2335: ("utf8mb4_uca1400_romanian_nopad_as_cs", "utf8mb4"),
    2336: ("utf8mb4_uca1400_slovenian_ai_ci", "utf8mb4"),
    2337: ("utf8mb4_uca1400_slovenian_ai_cs", "utf8mb4"),
    2338: ("utf8mb4_uca1400_slovenian_as_ci", "utf8mb4"),
    2339: ("utf8mb4_uca1400_slovenian_as_cs", "utf8mb4"),
    2340: ("utf8mb4_uca1400_slovenian_nopad_ai_ci", "utf8mb4"),
    2341: ("utf8mb4_uca1400_slovenian_nopad_ai_cs", "utf8mb4"),
    2342: ("utf8mb4_uca1400_slovenian_nopad_as_ci", "utf8mb4"),
    2343: ("utf8mb4_uca1400_slovenian_nopad_as_cs", "utf8mb4"),
    2344: ("utf8mb4_uca1400_polish_ai_ci", "utf8mb4"),
    2345: ("utf8mb4_uca1400_polish_ai_cs", "utf8mb4"),
    2346: ("utf8mb4_uca1400_polish_as_ci", "utf8mb4"),
    2347: ("utf8mb4_uca1400_polish_as_cs", "utf8mb4"),
    2348: ("utf8mb4_uca1400_polish_nopad_ai_ci", "utf8mb4"),
    2349: ("utf8mb4_uca1400_polish_nopad_ai_cs", "utf8mb4"),
    2350: ("utf8mb4_uca1400_polish_nopad_as_ci", "utf8mb4"),
    2351: ("utf8mb4_uca1400_polish_nopad_as_cs", "utf8mb4"),
    2352: ("utf8mb4_uca1400_estonian_ai_ci", "utf8mb4"),
    2353: ("utf8mb4_uca1400_estonian_ai_cs", "utf8mb4"),
    2354: ("utf8mb4_uca1400_estonian_as_ci", "utf8mb4"),
    2355: ("utf8mb4_uca1400_estonian_as_cs", "utf8mb4"),
    2356: ("utf8mb4_uca1400_estonian_nopad_ai_ci", "utf8mb4"),
    2357: ("utf8mb4_uca1400_estonian_nopad_ai_cs", "utf8mb4"),
    2358: ("utf8mb4_uca1400_estonian_nopad_as_ci", "utf8mb4"),
    2359: ("utf8mb4_uca1400_estonian_nopad_as_cs", "utf8mb4"),
    2360: ("utf8mb4_uca1400_spanish_ai_ci", "utf8mb4"),
    2361: ("utf8mb4_uca1400_spanish_ai_cs", "utf8mb4"),
    2362: ("utf8mb4_uca1400_spanish_as_ci", "utf8mb4"),
    2363: ("utf8mb4_uca1400_spanish_as_cs", "utf8mb4"),
    2364: ("utf8mb4_uca1400_spanish_nopad_ai_ci", "utf8mb4"),
    2365: ("utf8mb4_uca1400_spanish_nopad_ai_cs", "utf8mb4"),
    2366: ("utf8mb4_uca1400_spanish_nopad_as_ci", "utf8mb4"),
    2367: ("utf8mb4_uca1400_spanish_nopad_as_cs", "utf8mb4"),
    2368: ("utf8mb4_uca1400_swedish_ai_ci", "utf8mb4"),
    2369: ("utf8mb4_uca1400_swedish_ai_cs", "utf8mb4"),
    2370: ("utf8mb4_uca1400_swedish_as_ci", "utf8mb4"),
    2371: ("utf8mb4_uca1400_swedish_as_cs", "utf8mb4"),
    2372: ("utf8mb4_uca1400_swedish_nopad_ai_ci", "utf8mb4"),
    2373: ("utf8mb4_uca1400_swedish_nopad_ai_cs", "utf8mb4"),
    2374: ("utf8mb4_uca1400_swedish_nopad_as_ci", "utf8mb4"),
    2375: ("utf8mb4_uca1400_swedish_nopad_as_cs", "utf8mb4"),
    2376: ("utf8mb4_uca1400_turkish_ai_ci", "utf8mb4"),
    2377: ("utf8mb4_uca1400_turkish_ai_cs", "utf8mb4"),
    2378: ("utf8mb4_uca1400_turkish_as_ci", "utf8mb4"),
    2379: ("utf8mb4_uca1400_turkish_as_cs", "utf8mb4"),
    2380: ("utf8mb4_uca1400_turkish_nopad_ai_ci", "utf8mb4"),
    2381: ("utf8mb4_uca1400_turkish_nopad_ai_cs", "utf8mb4"),
    2382: ("utf8mb4_uca1400_turkish_nopad_as_ci", "utf8mb4"),
    2383: ("utf8mb4_uca1400_turkish_nopad_as_cs", "utf8mb4"),
    2384: ("utf8mb4_uca1400_czech_ai_ci", "utf8mb4"),
    2385: ("utf8mb4_uca1400_czech_ai_cs", "utf8mb4"),
    2386: ("utf8mb4_uca1400_czech_as_ci", "utf8mb4"),
    2387: ("utf8mb4_uca1400_czech_as_cs", "utf8mb4"),
    2388: ("utf8mb4_uca1400_czech_nopad_ai_ci", "utf8mb4"),
    2389: ("utf8mb4_uca1400_czech_nopad_ai_cs", "utf8mb4"),
    2390: ("utf8mb4_uca1400_czech_nopad_as_ci", "utf8mb4"),
    2391: ("utf8mb4_uca1400_czech_nopad_as_cs", "utf8mb4"),
    2392: ("utf8mb4_uca1400_danish_ai_ci", "utf8mb4"),
    2393: ("utf8mb4_uca1400_danish_ai_cs", "utf8mb4"),
    2394: ("utf8mb4_uca1400_danish_as_ci", "utf8mb4"),
    2395: ("utf8mb4_uca1400_danish_as_cs", "utf8mb4"),
    2396: ("utf8mb4_uca1400_danish_nopad_ai_ci", "utf8mb4"),
    2397: ("utf8mb4_uca1400_danish_nopad_ai_cs", "utf8mb4"),
    2398: ("utf8mb4_uca1400_danish_nopad_as_ci", "utf8mb4"),
    2399: ("utf8mb4_uca1400_danish_nopad_as_cs", "utf8mb4"),
    2400: ("utf8mb4_uca1400_lithuanian_ai_ci", "utf8mb4"),
    2401: ("utf8mb4_uca1400_lithuanian_ai_cs", "utf8mb4"),
    2402: ("utf8mb4_uca1400_lithuanian_as_ci", "utf8mb4"),
    2403: ("utf8mb4_uca1400_lithuanian_as_cs", "utf8mb4"),
    2404: ("utf8mb4_uca1400_lithuanian_nopad_ai_ci", "utf8mb4"),
    2405: ("utf8mb4_uca1400_lithuanian_nopad_ai_cs", "utf8mb4"),
    2406: ("utf8mb4_uca1400_lithuanian_nopad_as_ci", "utf8mb4"),
    2407: ("utf8mb4_uca1400_lithuanian_nopad_as_cs", "utf8mb4"),
    2408: ("utf8mb4_uca1400_slovak_ai_ci", "utf8mb4"),
    2409: ("utf8mb4_uca1400_slovak_ai_cs", "utf8mb4"),
    2410: ("utf8mb4_uca1400_slovak_as_ci", "utf8mb4"),
    2411: ("utf8mb4_uca1400_slovak_as_cs", "utf8mb4"),
    2412: ("utf8mb4_uca1400_slovak_nopad_ai_ci", "utf8mb4"),
    2413: ("utf8mb4_uca1400_slovak_nopad_ai_cs", "utf8mb4"),
    2414: ("utf8mb4_uca1400_slovak_nopad_as_ci", "utf8mb4"),
    2415: ("utf8mb4_uca1400_slovak_nopad_as_cs", "utf8mb4"),
    2416: ("utf8mb4_uca1400_spanish2_ai_ci", "utf8mb4"),
    2417: ("utf8mb4_uca1400_spanish2_ai_cs", "utf8mb4"),
    2418: ("utf8mb4_uca1400_spanish2_as_ci", "utf8mb4"),
    2419: ("utf8mb4_uca1400_spanish2_as_cs", "utf8mb4"),
    2420: ("utf8mb4_uca1400_spanish2_nopad_ai_ci", "utf8mb4"),
    2421: ("utf8mb4_uca1400_spanish2_nopad_ai_cs", "utf8mb4"),
    2422: ("utf8mb4_uca1400_spanish2_nopad_as_ci", "utf8mb4"),
    2423: ("utf8mb4_uca1400_spanish2_nopad_as_cs", "utf8mb4"),
    2424: ("utf8mb4_uca1400_roman_ai_ci", "utf8mb4"),
    2425: ("utf8mb4_uca1400_roman_ai_cs", "utf8mb4"),
    2426: ("utf8mb4_uca1400_roman_as_ci", "utf8mb4"),
    2427: ("utf8mb4_uca1400_roman_as_cs", "utf8mb4"),
    2428: ("utf8mb4_uca1400_roman_nopad_ai_ci", "utf8mb4"),
    2429: ("utf8mb4_uca1400_roman_nopad_ai_cs", "utf8mb4"),
    2430: ("utf8mb4_uca1400_roman_nopad_as_ci", "utf8mb4"),
    2431: ("utf8mb4_uca1400_roman_nopad_as_cs", "utf8mb4"),
    2432: ("utf8mb4_uca1400_persian_ai_ci", "utf8mb4"),
    2433: ("utf8mb4_uca1400_persian_ai_cs", "utf8mb4"),
    2434: ("utf8mb4_uca1400_persian_as_ci", "utf8mb4"),
    2435: ("utf8mb4_uca1400_persian_as_cs", "utf8mb4"),
    2436: ("utf8mb4_uca1400_persian_nopad_ai_ci", "utf8mb4"),
    2437: ("utf8mb4_uca1400_persian_nopad_ai_cs", "utf8mb4"),
    2438: ("utf8mb4_uca1400_persian_nopad_as_ci", "utf8mb4"),
    2439: ("utf8mb4_uca1400_persian_nopad_as_cs", "utf8mb4"),
    2440: ("utf8mb4_uca1400_esperanto_ai_ci", "utf8mb4"),
    2441: ("utf8mb4_uca1400_esperanto_ai_cs", "utf8mb4"),
    2442: ("utf8mb4_uca1400_esperanto_as_ci", "utf8mb4"),
    2443: ("utf8mb4_uca1400_esperanto_as_cs", "utf8mb4"),
    2444: ("utf8mb4_uca1400_esperanto_nopad_ai_ci", "utf8mb4"),
    2445: ("utf8mb4_uca1400_esperanto_nopad_ai_cs", "utf8mb4"),
    2446: ("utf8mb4_uca1400_esperanto_nopad_as_ci", "utf8mb4"),
    2447: ("utf8mb4_uca1400_esperanto_nopad_as_cs", "utf8mb4"),
    2448: ("utf8mb4_uca1400_hungarian_ai_ci", "utf8mb4"),
    2449: ("utf8mb4_uca1400_hungarian_ai_cs", "utf8mb4"),
    2450: ("utf8mb4_uca1400_hungarian_as_ci", "utf8mb4"),
    2451: ("utf8mb4_uca1400_hungarian_as_cs", "utf8mb4"),
    2452: ("utf8mb4_uca1400_hungarian_nopad_ai_ci", "utf8mb4"),
    2453: ("utf8mb4_uca1400_hungarian_nopad_ai_cs", "utf8mb4"),
    2454: ("utf8mb4_uca1400_hungarian_nopad_as_ci", "utf8mb4"),
    2455: ("utf8mb4_uca1400_hungarian_nopad_as_cs", "utf8mb4"),
    2456: ("utf8mb4_uca1400_sinhala_ai_ci", "utf8mb4"),
    2457: ("utf8mb4_uca1400_sinhala_ai_cs", "utf8mb4"),
    2458: ("utf8mb4_uca1400_sinhala_as_ci", "utf8mb4"),
    2459: ("utf8mb4_uca1400_sinhala_as_cs", "utf8mb4"),
    2460: ("utf8mb4_uca1400_sinhala_nopad_ai_ci", "utf8mb4"),
    2461: ("utf8mb4_uca1400_sinhala_nopad_ai_cs", "utf8mb4"),
    2462: ("utf8mb4_uca1400_sinhala_nopad_as_ci", "utf8mb4"),
    2463: ("utf8mb4_uca1400_sinhala_nopad_as_cs", "utf8mb4"),
    2464: ("utf8mb4_uca1400_german2_ai_ci", "utf8mb4"),
    2465: ("utf8mb4_uca1400_german2_ai_cs", "utf8mb4"),
    2466: ("utf8mb4_uca1400_german2_as_ci", "utf8mb4"),
    2467: ("utf8mb4_uca1400_german2_as_cs", "utf8mb4"),
    2468: ("utf8mb4_uca1400_german2_nopad_ai_ci", "utf8mb4"),
    2469: ("utf8mb4_uca1400_german2_nopad_ai_cs", "utf8mb4"),
    2470: ("utf8mb4_uca1400_german2_nopad_as_ci", "utf8mb4"),
    2471: ("utf8mb4_uca1400_german2_nopad_as_cs", "utf8mb4"),
    2488: ("utf8mb4_uca1400_vietnamese_ai_ci", "utf8mb4"),
    2489: ("utf8mb4_uca1400_vietnamese_ai_cs", "utf8mb4"),
    2490: ("utf8mb4_uca1400_vietnamese_as_ci", "utf8mb4"),
    2491: ("utf8mb4_uca1400_vietnamese_as_cs", "utf8mb4"),
    2492: ("utf8mb4_uca1400_vietnamese_nopad_ai_ci", "utf8mb4"),
    2493: ("utf8mb4_uca1400_vietnamese_nopad_ai_cs", "utf8mb4"),
    2494: ("utf8mb4_uca1400_vietnamese_nopad_as_ci", "utf8mb4"),
    2495: ("utf8mb4_uca1400_vietnamese_nopad_as_cs", "utf8mb4"),
    2496: ("utf8mb4_uca1400_croatian_ai_ci", "utf8mb4"),
    2497: ("utf8mb4_uca1400_croatian_ai_cs", "utf8mb4"),
    2498: ("utf8mb4_uca1400_croatian_as_ci", "utf8mb4"),
    2499: ("utf8mb4_uca1400_croatian_as_cs", "utf8mb4"),
    2500: ("utf8mb4_uca1400_croatian_nopad_ai_ci", "utf8mb4"),
    2501: ("utf8mb4_uca1400_croatian_nopad_ai_cs", "utf8mb4"),
    2502: ("utf8mb4_uca1400_croatian_nopad_as_ci", "utf8mb4"),
    2503: ("utf8mb4_uca1400_croatian_nopad_as_cs", "utf8mb4"),
    2560: ("ucs2_uca1400_ai_ci", "ucs2"),
    2561: ("ucs2_uca1400_ai_cs", "ucs2"),
    2562: ("ucs2_uca1400_as_ci", "ucs2"),
    2563: ("ucs2_uca1400_as_cs", "ucs2"),
    2564: ("ucs2_uca1400_nopad_ai_ci", "ucs2"),
    2565: ("ucs2_uca1400_nopad_ai_cs", "ucs2"),
    2566: ("ucs2_uca1400_nopad_as_ci", "ucs2"),
    2567: ("ucs2_uca1400_nopad_as_cs", "ucs2"),
    2568: ("ucs2_uca1400_icelandic_ai_ci", "ucs2"),
    2569: ("ucs2_uca1400_icelandic_ai_cs", "ucs2"),
    2570: ("ucs2_uca1400_icelandic_as_ci", "ucs2"),
    2571: ("ucs2_uca1400_icelandic_as_cs", "ucs2"),
    2572: ("ucs2_uca1400_icelandic_nopad_ai_ci", "ucs2"),
    2573: ("ucs2_uca1400_icelandic_nopad_ai_cs", "ucs2"),
    2574: ("ucs2_uca1400_icelandic_nopad_as_ci", "ucs2"),
    2575: ("ucs2_uca1400_icelandic_nopad_as_cs", "ucs2"),
    2576: ("ucs2_uca1400_latvian_ai_ci", "ucs2"),
    2577: ("ucs2_uca1400_latvian_ai_cs", "ucs2"),
    2578: ("ucs2_uca1400_latvian_as_ci", "ucs2"),
    2579: ("ucs2_uca1400_latvian_as_cs", "ucs2"),
    2580: ("ucs2_uca1400_latvian_nopad_ai_ci", "ucs2"),
    2581: ("ucs2_uca1400_latvian_nopad_ai_cs", "ucs2"),
    2582: ("ucs2_uca1400_latvian_nopad_as_ci", "ucs2"),
    2583: ("ucs2_uca1400_latvian_nopad_as_cs", "ucs2"),
    2584: ("ucs2_uca1400_romanian_ai_ci", "ucs2"),
    2585: ("ucs2_uca1400_romanian_ai_cs", "ucs2"),
    2586: ("ucs2_uca1400_romanian_as_ci", "ucs2"),
    2587: ("ucs2_uca1400_romanian_as_cs", "ucs2"),
    2588: ("ucs2_uca1400_romanian_nopad_ai_ci", "ucs2"),
    2589: ("ucs2_uca1400_romanian_nopad_ai_cs", "ucs2"),
    2590: ("ucs2_uca1400_romanian_nopad_as_ci", "ucs2"),
    2591: ("ucs2_uca1400_romanian_nopad_as_cs", "ucs2"),
    2592: ("ucs2_uca1400_slovenian_ai_ci", "ucs2"),
    2593: ("ucs2_uca1400_slovenian_ai_cs", "ucs2"),
    2594: ("ucs2_uca1400_slovenian_as_ci", "ucs2"),
    2595: ("ucs2_uca1400_slovenian_as_cs", "ucs2"),
    2596: ("ucs2_uca1400_slovenian_nopad_ai_ci", "ucs2"),
    2597: ("ucs2_uca1400_slovenian_nopad_ai_cs", "ucs2"),
    2598: ("ucs2_uca1400_slovenian_nopad_as_ci", "ucs2"),
    2599: ("ucs2_uca1400_slovenian_nopad_as_cs", "ucs2"),
    2600: ("ucs2_uca1400_polish_ai_ci", "ucs2"),
    2601: ("ucs2_uca1400_polish_ai_cs", "ucs2"),
    2602: ("ucs2_uca1400_polish_as_ci", "ucs2"),
    2603: ("ucs2_uca1400_polish_as_cs", "ucs2"),
    2604: ("ucs2_uca1400_polish_nopad_ai_ci", "ucs2"),
    2605: ("ucs2_uca1400_polish_nopad_ai_cs", "ucs2"),
    2606: ("ucs2_uca1400_polish_nopad_as_ci", "ucs2"),
    2607: ("ucs2_uca1400_polish_nopad_as_cs", "ucs2"),
    2608: ("ucs2_uca1400_estonian_ai_ci", "ucs2"),
    2609: ("ucs2_uca1400_estonian_ai_cs", "ucs2"),
    2610: ("ucs2_uca1400_estonian_as_ci", "ucs2"),
    2611: ("ucs2_uca1400_estonian_as_cs", "ucs2"),
    2612: ("ucs2_uca1400_estonian_nopad_ai_ci", "ucs2"),
    2613: ("ucs2_uca1400_estonian_nopad_ai_cs", "ucs2"),
    2614: ("ucs2_uca1400_estonian_nopad_as_ci", "ucs2"),
    2615: ("ucs2_uca1400_estonian_nopad_as_cs", "ucs2"),
    2616: ("ucs2_uca1400_spanish_ai_ci", "ucs2"),
    2617: ("ucs2_uca1400_spanish_ai_cs", "ucs2"),
    2618: ("ucs2_uca1400_spanish_as_ci", "ucs2"),
    2619: ("ucs2_uca1400_spanish_as_cs", "ucs2"),
    2620: ("ucs2_uca1400_spanish_nopad_ai_ci", "ucs2"),
    2621: ("ucs2_uca1400_spanish_nopad_ai_cs", "ucs2"),
    2622: ("ucs2_uca1400_spanish_nopad_as_ci", "ucs2"),
    2623: ("ucs2_uca1400_spanish_nopad_as_cs", "ucs2"),
    2624: ("ucs2_uca1400_swedish_ai_ci", "ucs2"),
    2625: ("ucs2_uca1400_swedish_ai_cs", "ucs2"),
    2626: ("ucs2_uca1400_swedish_as_ci", "ucs2"),
    2627: ("ucs2_uca1400_swedish_as_cs", "ucs2"),
    2628: ("ucs2_uca1400_swedish_nopad_ai_ci", "ucs2"),
    2629: ("ucs2_uca1400_swedish_nopad_ai_cs", "ucs2"),
    2630: ("ucs2_uca1400_swedish_nopad_as_ci", "ucs2"),
    2631: ("ucs2_uca1400_swedish_nopad_as_cs", "ucs2"),
    2632: ("ucs2_uca1400_turkish_ai_ci", "ucs2"),
    2633: ("ucs2_uca1400_turkish_ai_cs", "ucs2"),
    2634: ("ucs2_uca1400_turkish_as_ci", "ucs2"),
    2635: ("ucs2_uca1400_turkish_as_cs", "ucs2"),
    2636: ("ucs2_uca1400_turkish_nopad_ai_ci", "ucs2"),
    2637: ("ucs2_uca1400_turkish_nopad_ai_cs", "ucs2"),
    2638: ("ucs2_uca1400_turkish_nopad_as_ci", "ucs2"),
    2639: ("ucs2_uca1400_turkish_nopad_as_cs", "ucs2"),
    2640: ("ucs2_uca1400_czech_ai_ci", "ucs2"),
    2641: ("ucs2_uca1400_czech_ai_cs", "ucs2"),
    2642: ("ucs2_uca1400_czech_as_ci", "ucs2"),
    2643: ("ucs2_uca1400_czech_as_cs", "ucs2"),
    2644: ("ucs2_uca1400_czech_nopad_ai_ci", "ucs2"),
    2645: ("ucs2_uca1400_czech_nopad_ai_cs", "ucs2"),
    2646: ("ucs2_uca1400_czech_nopad_as_ci", "ucs2"),
    2647: ("ucs2_uca1400_czech_nopad_as_cs", "ucs2"),
    2648: ("ucs2_uca1400_danish_ai_ci", "ucs2"),
    2649: ("ucs2_uca1400_danish_ai_cs", "ucs2"),
    2650: ("ucs2_uca1400_danish_as_ci", "ucs2"),
    2651: ("ucs2_uca1400_danish_as_cs", "ucs2"),
    2652: ("ucs2_uca1400_danish_nopad_ai_ci", "ucs2"),
    2653: ("ucs2_uca1400_danish_nopad_ai_cs", "ucs2"),
    2654: ("ucs2_uca1400_danish_nopad_as_ci", "ucs2"),
    2655: ("ucs2_uca1400_danish_nopad_as_cs", "ucs2"),
    2656: ("ucs2_uca1400_lithuanian_ai_ci", "ucs2"),
    2657: ("ucs2_uca1400_lithuanian_ai_cs", "ucs2"),
    2658: ("ucs2_uca1400_lithuanian_as_ci", "ucs2"),
    2659: ("ucs2_uca1400_lithuanian_as_cs", "ucs2"),
    2660: ("ucs2_uca1400_lithuanian_nopad_ai_ci", "ucs2"),
    2661: ("ucs2_uca1400_lithuanian_nopad_ai_cs", "ucs2"),
    2662: ("ucs2_uca1400_lithuanian_nopad_as_ci", "ucs2"),
    2663: ("ucs2_uca1400_lithuanian_nopad_as_cs", "ucs2"),
    2664: ("ucs2_uca1400_slovak_ai_ci", "ucs2"),
    2665: ("ucs2_uca1400_slovak_ai_cs", "ucs2"),
    2666: ("ucs2_uca1400_slovak_as_ci", "ucs2"),
    2667: ("ucs2_uca1400_slovak_as_cs", "ucs2"),
    2668: ("ucs2_uca1400_slovak_nopad_ai_ci", "ucs2"),
    2669: ("ucs2_uca1400_slovak_nopad_ai_cs", "ucs2"),
    2670: ("ucs2_uca1400_slovak_nopad_as_ci", "ucs2"),
    2671: ("ucs2_uca1400_slovak_nopad_as_cs", "ucs2"),
    2672: ("ucs2_uca1400_spanish2_ai_ci", "ucs2"),
    2673: ("ucs2_uca1400_spanish2_ai_cs", "ucs2"),
    2674: ("ucs2_uca1400_spanish2_as_ci", "ucs2"),
    2675: ("ucs2_uca1400_spanish2_as_cs", "ucs2"),
    2676: ("ucs2_uca1400_spanish2_nopad_ai_ci", "ucs2"),
    2677: ("ucs2_uca1400_spanish2_nopad_ai_cs", "ucs2"),
    2678: ("ucs2_uca1400_spanish2_nopad_as_ci", "ucs2"),
    2679: ("ucs2_uca1400_spanish2_nopad_as_cs", "ucs2"),
    2680: ("ucs2_uca1400_roman_ai_ci", "ucs2"),
    2681: ("ucs2_uca1400_roman_ai_cs", "ucs2"),
    2682: ("ucs2_uca1400_roman_as_ci", "ucs2"),
    2683: ("ucs2_uca1400_roman_as_cs", "ucs2"),
    2684: ("ucs2_uca1400_roman_nopad_ai_ci", "ucs2"),
    2685: ("ucs2_uca1400_roman_nopad_ai_cs", "ucs2"),
    2686: ("ucs2_uca1400_roman_nopad_as_ci", "ucs2"),
    2687: ("ucs2_uca1400_roman_nopad_as_cs", "ucs2"),
    2688: ("ucs2_uca1400_persian_ai_ci", "ucs2"),
    2689: ("ucs2_uca1400_persian_ai_cs", "ucs2"),
    2690: ("ucs2_uca1400_persian_as_ci", "ucs2"),
    2691: ("ucs2_uca1400_persian_as_cs", "ucs2"),
    2692: ("ucs2_uca1400_persian_nopad_ai_ci", "ucs2"),
    2693: ("ucs2_uca1400_persian_nopad_ai_cs", "ucs2"),
    2694: ("ucs2_uca1400_persian_nopad_as_ci", "ucs2"),
    2695: ("ucs2_uca1400_persian_nopad_as_cs", "ucs2"),
    2696: ("ucs2_uca1400_esperanto_ai_ci", "ucs2"),
    2697: ("ucs2_uca1400_esperanto_ai_cs", "ucs2"),
    2698: ("ucs2_uca1400_esperanto_as_ci", "ucs2"),
    2699: ("ucs2_uca1400_esperanto_as_cs", "ucs2"),
    2700: ("ucs2_uca1400_esperanto_nopad_ai_ci", "ucs2"),
    2701: ("ucs2_uca1400_esperanto_nopad_ai_cs", "ucs2"),
    2702: ("ucs2_uca1400_esperanto_nopad_as_ci", "ucs2"),
    2703: ("ucs2_uca1400_esperanto_nopad_as_cs", "ucs2"),
    2704: ("ucs2_uca1400_hungarian_ai_ci", "ucs2"),
    2705: ("ucs2_uca1400_hungarian_ai_cs", "ucs2"),
    2706: ("ucs2_uca1400_hungarian_as_ci", "ucs2"),
    2707: ("ucs2_uca1400_hungarian_as_cs", "ucs2"),
    2708: ("ucs2_uca1400_hungarian_nopad_ai_ci", "ucs2"),
    2709: ("ucs2_uca1400_hungarian_nopad_ai_cs", "ucs2"),
    2710: ("ucs2_uca1400_hungarian_nopad_as_ci", "ucs2"),
    2711: ("ucs2_uca1400_hungarian_nopad_as_cs", "ucs2"),
    2712: ("ucs2_uca1400_sinhala_ai_ci", "ucs2"),
    2713: ("ucs2_uca1400_sinhala_ai_cs", "ucs2"),
    2714: ("ucs2_uca1400_sinhala_as_ci", "ucs2"),
    2715: ("ucs2_uca1400_sinhala_as_cs", "ucs2"),
    2716: ("ucs2_uca1400_sinhala_nopad_ai_ci", "ucs2"),
    2717: ("ucs2_uca1400_sinhala_nopad_ai_cs", "ucs2"),
    2718: ("ucs2_uca1400_sinhala_nopad_as_ci", "ucs2"),
    2719: ("ucs2_uca1400_sinhala_nopad_as_cs", "ucs2"),
    2720: ("ucs2_uca1400_german2_ai_ci", "ucs2"),
    2721: ("ucs2_uca1400_german2_ai_cs", "ucs2"),
    2722: ("ucs2_uca1400_german2_as_ci", "ucs2"),
    2723: ("ucs2_uca1400_german2_as_cs", "ucs2"),
    2724: ("ucs2_uca1400_german2_nopad_ai_ci", "ucs2"),
    2725: ("ucs2_uca1400_german2_nopad_ai_cs", "ucs2"),
    2726: ("ucs2_uca1400_german2_nopad_as_ci", "ucs2"),
    2727: ("ucs2_uca1400_german2_nopad_as_cs", "ucs2"),
    2744: ("ucs2_uca1400_vietnamese_ai_ci", "ucs2"),
    2745: ("ucs2_uca1400_vietnamese_ai_cs", "ucs2"),
    2746: ("ucs2_uca1400_vietnamese_as_ci", "ucs2"),
    2747: ("ucs2_uca1400_vietnamese_as_cs", "ucs2"),
    2748: ("ucs2_uca1400_vietnamese_nopad_ai_ci", "ucs2"),
    2749: ("ucs2_uca1400_vietnamese_nopad_ai_cs", "ucs2"),
    2750: ("ucs2_uca1400_vietnamese_nopad_as_ci", "ucs2"),
    2751: ("ucs2_uca1400_vietnamese_nopad_as_cs", "ucs2"),
    2752: ("ucs2_uca1400_croatian_ai_ci", "ucs2"),
    2753: ("ucs2_uca1400_croatian_ai_cs", "ucs2"),
    2754: ("ucs2_uca1400_croatian_as_ci", "ucs2"),
    2755: ("ucs2_uca1400_croatian_as_cs", "ucs2"),
    2756: ("ucs2_uca1400_croatian_nopad_ai_ci", "ucs2"),
    2757: ("ucs2_uca1400_croatian_nopad_ai_cs", "ucs2"),
    2758: ("ucs2_uca1400_croatian_nopad_as_ci", "ucs2"),
    2759: ("ucs2_uca1400_croatian_nopad_as_cs", "ucs2"),
    2816: ("utf16_uca1400_ai_ci", "utf16"),
    2817: ("utf16_uca1400_ai_cs", "utf16"),
    2818: ("utf16_uca1400_as_ci", "utf16"),
    2819: ("utf16_uca1400_as_cs", "utf16"),
    2820: ("utf16_uca1400_nopad_ai_ci", "utf16"),
    2821: ("utf16_uca1400_nopad_ai_cs", "utf16"),
    2822: ("utf16_uca1400_nopad_as_ci", "utf16"),
    2823: ("utf16_uca1400_nopad_as_cs", "utf16"),
    2824: ("utf16_uca1400_icelandic_ai_ci", "utf16"),
    2825: ("utf16_uca1400_icelandic_ai_cs", "utf16"),
    2826: ("utf16_uca1400_icelandic_as_ci", "utf16"),
    2827: ("utf16_uca1400_icelandic_as_cs", "utf16"),
    2828: ("utf16_uca1400_icelandic_nopad_ai_ci", "utf16"),
    2829: ("utf16_uca1400_icelandic_nopad_ai_cs", "utf16"),
    2830: ("utf16_uca1400_icelandic_nopad_as_ci", "utf16"),
    2831: ("utf16_uca1400_icelandic_nopad_as_cs", "utf16"),
    2832: ("utf16_uca1400_latvian_ai_ci", "utf16"),
    2833: ("utf16_uca1400_latvian_ai_cs", "utf16"),
    2834: ("utf16_uca1400_latvian_as_ci", "utf16"),
    2835: ("utf16_uca1400_latvian_as_cs", "utf16"),
    2836: ("utf16_uca1400_latvian_nopad_ai_ci", "utf16"),
    2837: ("utf16_uca1400_latvian_nopad_ai_cs", "utf16"),
    2838: ("utf16_uca1400_latvian_nopad_as_ci", "utf16"),
    2839: ("utf16_uca1400_latvian_nopad_as_cs", "utf16"),
    2840: ("utf16_uca1400_romanian_ai_ci", "utf16"),
    2841: ("utf16_uca1400_romanian_ai_cs", "utf16"),
    2842: ("utf16_uca1400_romanian_as_ci", "utf16"),
    2843: ("utf16_uca1400_romanian_as_cs", "utf16"),
    2844: ("utf16_uca1400_romanian_nopad_ai_ci", "utf16"),
    2845: ("utf16_uca1400_romanian_nopad_ai_cs", "utf16"),
    2846: ("utf16_uca1400_romanian_nopad_as_ci", "utf16"),
    2847: ("utf16_uca1400_romanian_nopad_as_cs", "utf16"),
    2848: ("utf16_uca1400_slovenian_ai_ci", "utf16"),
    2849: ("utf16_uca1400_slovenian_ai_cs", "utf16"),
    2850: ("utf16_uca1400_slovenian_as_ci", "utf16"),
    2851: ("utf16_uca1400_slovenian_as_cs", "utf16"),
    2852: ("utf16_uca1400_slovenian_nopad_ai_ci", "utf16"),
    2853: ("utf16_uca1400_slovenian_nopad_ai_cs", "utf16"),
    2854: ("utf16_uca1400_slovenian_nopad_as_ci", "utf16"),
    2855: ("utf16_uca1400_slovenian_nopad_as_cs", "utf16"),
    2856: ("utf16_uca1400_polish_ai_ci", "utf16"),
    2857: ("utf16_uca1400_polish_ai_cs", "utf16"),
    2858: ("utf16_uca1400_polish_as_ci", "utf16"),
    2859: ("utf16_uca1400_polish_as_cs", "utf16"),
    2860: ("utf16_uca1400_polish_nopad_ai_ci", "utf16"),
    2861: ("utf16_uca1400_polish_nopad_ai_cs", "utf16"),
    2862: ("utf16_uca1400_polish_nopad_as_ci", "utf16"),
    2863: ("utf16_uca1400_polish_nopad_as_cs", "utf16"),
    2864: ("utf16_uca1400_estonian_ai_ci", "utf16"),
    2865: ("utf16_uca1400_estonian_ai_cs", "utf16"),
    2866: ("utf16_uca1400_estonian_as_ci", "utf16"),
    2867: ("utf16_uca1400_estonian_as_cs", "utf16"),
    2868: ("utf16_uca1400_estonian_nopad_ai_ci", "utf16"),
    2869: ("utf16_uca1400_estonian_nopad_ai_cs", "utf16"),
    2870: ("utf16_uca1400_estonian_nopad_as_ci", "utf16"),
    2871: ("utf16_uca1400_estonian_nopad_as_cs", "utf16"),
    2872: ("utf16_uca1400_spanish_ai_ci", "utf16"),
    2873: ("utf16_uca1400_spanish_ai_cs", "utf16"),
    2874: ("utf16_uca1400_spanish_as_ci", "utf16"),
    2875: ("utf16_uca1400_spanish_as_cs", "utf16"),
    2876: ("utf16_uca1400_spanish_nopad_ai_ci", "utf16"),
    2877: ("utf16_uca1400_spanish_nopad_ai_cs", "utf16"),
    2878: ("utf16_uca1400_spanish_nopad_as_ci", "utf16"),
    2879: ("utf16_uca1400_spanish_nopad_as_cs", "utf16"),
    2880: ("utf16_uca1400_swedish_ai_ci", "utf16"),
    2881: ("utf16_uca1400_swedish_ai_cs", "utf16"),
    2882: ("utf16_uca1400_swedish_as_ci", "utf16"),
    2883: ("utf16_uca1400_swedish_as_cs", "utf16"),
    2884: ("utf16_uca1400_swedish_nopad_ai_ci", "utf16"),
    2885: ("utf16_uca1400_swedish_nopad_ai_cs", "utf16"),
    2886: ("utf16_uca1400_swedish_nopad_as_ci", "utf16"),
    2887: ("utf16_uca1400_swedish_nopad_as_cs", "utf16"),
    2888: ("utf16_uca1400_turkish_ai_ci", "utf16"),
    2889: ("utf16_uca1400_turkish_ai_cs", "utf16"),
    2890: ("utf16_uca1400_turkish_as_ci", "utf16"),
    2891: ("utf16_uca1400_turkish_as_cs", "utf16"),
    2892: ("utf16_uca1400_turkish_nopad_ai_ci", "utf16"),
    2893: ("utf16_uca1400_turkish_nopad_ai_cs", "utf16"),
    2894: ("utf16_uca1400_turkish_nopad_as_ci", "utf16"),
    2895: ("utf16_uca1400_turkish_nopad_as_cs", "utf16"),
    2896: ("utf16_uca1400_czech_ai_ci", "utf16"),
    2897: ("utf16_uca1400_czech_ai_cs", "utf16"),
    2898: ("utf16_uca1400_czech_as_ci", "utf16"),
    2899: ("utf16_uca1400_czech_as_cs", "utf16"),
    2900: ("utf16_uca1400_czech_nopad_ai_ci", "utf16"),
    2901: ("utf16_uca1400_czech_nopad_ai_cs", "utf16"),
    2902: ("utf16_uca1400_czech_nopad_as_ci", "utf16"),
    2903: ("utf16_uca1400_czech_nopad_as_cs", "utf16"),
    2904: ("utf16_uca1400_danish_ai_ci", "utf16"),
    2905: ("utf16_uca1400_danish_ai_cs", "utf16"),
    2906: ("utf16_uca1400_danish_as_ci", "utf16"),
    2907: ("utf16_uca1400_danish_as_cs", "utf16"),
    2908: ("utf16_uca1400_danish_nopad_ai_ci", "utf16"),
    2909: ("utf16_uca1400_danish_nopad_ai_cs", "utf16"),
    2910: ("utf16_uca1400_danish_nopad_as_ci", "utf16"),
    2911: ("utf16_uca1400_danish_nopad_as_cs", "utf16"),
    2912: ("utf16_uca1400_lithuanian_ai_ci", "utf16"),
    2913: ("utf16_uca1400_lithuanian_ai_cs", "utf16"),
    2914: ("utf16_uca1400_lithuanian_as_ci", "utf16"),
    2915: ("utf16_uca1400_lithuanian_as_cs", "utf16"),
    2916: ("utf16_uca1400_lithuanian_nopad_ai_ci", "utf16"),
    2917: ("utf16_uca1400_lithuanian_nopad_ai_cs", "utf16"),
    2918: ("utf16_uca1400_lithuanian_nopad_as_ci", "utf16"),
    2919: ("utf16_uca1400_lithuanian_nopad_as_cs", "utf16"),
    2920: ("utf16_uca1400_slovak_ai_ci", "utf16"),
    2921: ("utf16_uca1400_slovak_ai_cs", "utf16"),
    2922: ("utf16_uca1400_slovak_as_ci", "utf16"),
    2923: ("utf16_uca1400_slovak_as_cs", "utf16"),
    2924: ("utf16_uca1400_slovak_nopad_ai_ci", "utf16"),
    2925: ("utf16_uca1400_slovak_nopad_ai_cs", "utf16"),
    2926: ("utf16_uca1400_slovak_nopad_as_ci", "utf16"),
    2927: ("utf16_uca1400_slovak_nopad_as_cs", "utf16"),
    2928: ("utf16_uca1400_spanish2_ai_ci", "utf16"),
    2929: ("utf16_uca1400_spanish2_ai_cs", "utf16"),
    2930: ("utf16_uca1400_spanish2_as_ci", "utf16"),
    2931: ("utf16_uca1400_spanish2_as_cs", "utf16"),
    2932: ("utf16_uca1400_spanish2_nopad_ai_ci", "utf16"),
    2933: ("utf16_uca1400_spanish2_nopad_ai_cs", "utf16"),
    2934: ("utf16_uca1400_spanish2_nopad_as_ci", "utf16"),
    2935: ("utf16_uca1400_spanish2_nopad_as_cs", "utf16"),
    2936: ("utf16_uca1400_roman_ai_ci", "utf16"),
    2937: ("utf16_uca1400_roman_ai_cs", "utf16"),
    2938: ("utf16_uca1400_roman_as_ci", "utf16"),
    2939: ("utf16_uca1400_roman_as_cs", "utf16"),
    2940: ("utf16_uca1400_roman_nopad_ai_ci", "utf16"),
    2941: ("utf16_uca1400_roman_nopad_ai_cs", "utf16"),
    2942: ("utf16_uca1400_roman_nopad_as_ci", "utf16"),
    2943: ("utf16_uca1400_roman_nopad_as_cs", "utf16"),
    2944: ("utf16_uca1400_persian_ai_ci", "utf16"),
    2945: ("utf16_uca1400_persian_ai_cs", "utf16"),
    2946: ("utf16_uca1400_persian_as_ci", "utf16"),
    2947: ("utf16_uca1400_persian_as_cs", "utf16"),
    2948: ("utf16_uca1400_persian_nopad_ai_ci", "utf16"),
    2949: ("utf16_uca1400_persian_nopad_ai_cs", "utf16"),
    2950: ("utf16_uca1400_persian_nopad_as_ci", "utf16"),
    2951: ("utf16_uca1400_persian_nopad_as_cs", "utf16"),
    2952: ("utf16_uca1400_esperanto_ai_ci", "utf16"),
    2953: ("utf16_uca1400_esperanto_ai_cs", "utf16"),
    2954: ("utf16_uca1400_esperanto_as_ci", "utf16"),
    2955: ("utf16_uca1400_esperanto_as_cs", "utf16"),
    2956: ("utf16_uca1400_esperanto_nopad_ai_ci", "utf16"),
    2957: ("utf16_uca1400_esperanto_nopad_ai_cs", "utf16"),
    2958: ("utf16_uca1400_esperanto_nopad_as_ci", "utf16"),
    2959: ("utf16_uca1400_esperanto_nopad_as_cs", "utf16"),
    2960: ("utf16_uca1400_hungarian_ai_ci", "utf16"),
    2961: ("utf16_uca1400_hungarian_ai_cs", "utf16"),
    2962: ("utf16_uca1400_hungarian_as_ci", "utf16"),
    2963: ("utf16_uca1400_hungarian_as_cs", "utf16"),
    2964: ("utf16_uca1400_hungarian_nopad_ai_ci", "utf16"),
    2965: ("utf16_uca1400_hungarian_nopad_ai_cs", "utf16"),
    2966: ("utf16_uca1400_hungarian_nopad_as_ci", "utf16"),
    2967: ("utf16_uca1400_hungarian_nopad_as_cs", "utf16"),
    2968: ("utf16_uca1400_sinhala_ai_ci", "utf16"),
    2969: ("utf16_uca1400_sinhala_ai_cs", "utf16"),
    2970: ("utf16_uca1400_sinhala_as_ci", "utf16"),
    2971: ("utf16_uca1400_sinhala_as_cs", "utf16"),
    2972: ("utf16_uca1400_sinhala_nopad_ai_ci", "utf16"),
    2973: ("utf16_uca1400_sinhala_nopad_ai_cs", "utf16"),
    2974: ("utf16_uca1400_sinhala_nopad_as_ci", "utf16"),
    2975: ("utf16_uca1400_sinhala_nopad_as_cs", "utf16"),
    2976: ("utf16_uca1400_german2_ai_ci", "utf16"),
    2977: ("utf16_uca1400_german2_ai_cs", "utf16"),
    2978: ("utf16_uca1400_german2_as_ci", "utf16"),
    2979: ("utf16_uca1400_german2_as_cs", "utf16"),
    2980: ("utf16_uca1400_german2_nopad_ai_ci", "utf16"),
    2981: ("utf16_uca1400_german2_nopad_ai_cs", "utf16"),
    2982: ("utf16_uca1400_german2_nopad_as_ci", "utf16"),
    2983: ("utf16_uca1400_german2_nopad_as_cs", "utf16"),
    3000: ("utf16_uca1400_vietnamese_ai_ci", "utf16"),
    3001: ("utf16_uca1400_vietnamese_ai_cs", "utf16"),
    3002: ("utf16_uca1400_vietnamese_as_ci", "utf16"),
    3003: ("utf16_uca1400_vietnamese_as_cs", "utf16"),
    3004: ("utf16_uca1400_vietnamese_nopad_ai_ci", "utf16"),
    3005: ("utf16_uca1400_vietnamese_nopad_ai_cs", "utf16"),
    3006: ("utf16_uca1400_vietnamese_nopad_as_ci", "utf16"),
    3007: ("utf16_uca1400_vietnamese_nopad_as_cs", "utf16"),
    3008: ("utf16_uca1400_croatian_ai_ci", "utf16"),
    3009: ("utf16_uca1400_croatian_ai_cs", "utf16"),
    3010: ("utf16_uca1400_croatian_as_ci", "utf16"),
    3011: ("utf16_uca1400_croatian_as_cs", "utf16"),
    3012: ("utf16_uca1400_croatian_nopad_ai_ci", "utf16"),
    3013: ("utf16_uca1400_croatian_nopad_ai_cs", "utf16"),
    3014: ("utf16_uca1400_croatian_nopad_as_ci", "utf16"),
    3015: ("utf16_uca1400_croatian_nopad_as_cs", "utf16"),
    3072: ("utf32_uca1400_ai_ci", "utf32"),
    3073: ("utf32_uca1400_ai_cs", "utf32"),
    3074: ("utf32_uca1400_as_ci", "utf32"),
    3075: ("utf32_uca1400_as_cs", "utf32"),
    3076: ("utf32_uca1400_nopad_ai_ci", "utf32"),
    3077: ("utf32_uca1400_nopad_ai_cs", "utf32"),
    3078: ("utf32_uca1400_nopad_as_ci", "utf32"),
    3079: ("utf32_uca1400_nopad_as_cs", "utf32"),
    3080: ("utf32_uca1400_icelandic_ai_ci", "utf32"),
    3081: ("utf32_uca1400_icelandic_ai_cs", "utf32"),
    3082: ("utf32_uca1400_icelandic_as_ci", "utf32"),
    3083: ("utf32_uca1400_icelandic_as_cs", "utf32"),
    3084: ("utf32_uca1400_icelandic_nopad_ai_ci", "utf32"),
    3085: ("utf32_uca1400_icelandic_nopad_ai_cs", "utf32"),
    3086: ("utf32_uca1400_icelandic_nopad_as_ci", "utf32"),
    3087: ("utf32_uca1400_icelandic_nopad_as_cs", "utf32"),
    3088: ("utf32_uca1400_latvian_ai_ci", "utf32"),
    3089: ("utf32_uca1400_latvian_ai_cs", "utf32"),
    3090: ("utf32_uca1400_latvian_as_ci", "utf32"),
    3091: ("utf32_uca1400_latvian_as_cs", "utf32"),
    3092: ("utf32_uca1400_latvian_nopad_ai_ci", "utf32"),
    3093: ("utf32_uca1400_latvian_nopad_ai_cs", "utf32"),
    3094: ("utf32_uca1400_latvian_nopad_as_ci", "utf32"),
    3095: ("utf32_uca1400_latvian_nopad_as_cs", "utf32"),
    3096: ("utf32_uca1400_romanian_ai_ci", "utf32"),
    3097: ("utf32_uca1400_romanian_ai_cs", "utf32"),
    3098: ("utf32_uca1400_romanian_as_ci", "utf32"),
    3099: ("utf32_uca1400_romanian_as_cs", "utf32"),
    3100: ("utf32_uca1400_romanian_nopad_ai_ci", "utf32"),
    3101: ("utf32_uca1400_romanian_nopad_ai_cs", "utf32"),
    3102: ("utf32_uca1400_romanian_nopad_as_ci", "utf32"),
    3103: ("utf32_uca1400_romanian_nopad_as_cs", "utf32"),
    3104: ("utf32_uca1400_slovenian_ai_ci", "utf32"),
    3105: ("utf32_uca1400_slovenian_ai_cs", "utf32"),
    3106: ("utf32_uca1400_slovenian_as_ci", "utf32"),
    3107: ("utf32_uca1400_slovenian_as_cs", "utf32"),
    3108: ("utf32_uca1400_slovenian_nopad_ai_ci", "utf32"),
    3109: ("utf32_uca1400_slovenian_nopad_ai_cs", "utf32"),
    3110: ("utf32_uca1400_slovenian_nopad_as_ci", "utf32"),
    3111: ("utf32_uca1400_slovenian_nopad_as_cs", "utf32"),
    3112: ("utf32_uca1400_polish_ai_ci", "utf32"),
    3113: ("utf32_uca1400_polish_ai_cs", "utf32"),
    3114: ("utf32_uca1400_polish_as_ci", "utf32"),
    3115: ("utf32_uca1400_polish_as_cs", "utf32"),
    3116: ("utf32_uca1400_polish_nopad_ai_ci", "utf32"),
    3117: ("utf32_uca1400_polish_nopad_ai_cs", "utf32"),
    3118: ("utf32_uca1400_polish_nopad_as_ci", "utf32"),
    3119: ("utf32_uca1400_polish_nopad_as_cs", "utf32"),
    3120: ("utf32_uca1400_estonian_ai_ci", "utf32"),
    3121: ("utf32_uca1400_estonian_ai_cs", "utf32"),
    3122: ("utf32_uca1400_estonian_as_ci", "utf32"),
    3123: ("utf32_uca1400_estonian_as_cs", "utf32"),
    3124: ("utf32_uca1400_estonian_nopad_ai_ci", "utf32"),
    3125: ("utf32_uca1400_estonian_nopad_ai_cs", "utf32"),
    3126: ("utf32_uca1400_estonian_nopad_as_ci", "utf32"),
    3127: ("utf32_uca1400_estonian_nopad_as_cs", "utf32"),
    3128: ("utf32_uca1400_spanish_ai_ci", "utf32"),
    3129: ("utf32_uca1400_spanish_ai_cs", "utf32"),
    3130: ("utf32_uca1400_spanish_as_ci", "utf32"),
    3131: ("utf32_uca1400_spanish_as_cs", "utf32"),
    3132: ("utf32_uca1400_spanish_nopad_ai_ci", "utf32"),
    3133: ("utf32_uca1400_spanish_nopad_ai_cs", "utf32"),
    3134: ("utf32_uca1400_spanish_nopad_as_ci", "utf32"),
    3135: ("utf32_uca1400_spanish_nopad_as_cs", "utf32"),
    3136: ("utf32_uca1400_swedish_ai_ci", "utf32"),
    3137: ("utf32_uca1400_swedish_ai_cs", "utf32"),
    3138: ("utf32_uca1400_swedish_as_ci", "utf32"),
    3139: ("utf32_uca1400_swedish_as_cs", "utf32"),
    3140: ("utf32_uca1400_swedish_nopad_ai_ci", "utf32"),
    3141: ("utf32_uca1400_swedish_nopad_ai_cs", "utf32"),
    3142: ("utf32_uca1400_swedish_nopad_as_ci", "utf32"),
    3143: ("utf32_uca1400_swedish_nopad_as_cs", "utf32"),
    3144: ("utf32_uca1400_turkish_ai_ci", "utf32"),
    3145: ("utf32_uca1400_turkish_ai_cs", "utf32"),
    3146: ("utf32_uca1400_turkish_as_ci", "utf32"),
    3147: ("utf32_uca1400_turkish_as_cs", "utf32"),
    3148: ("utf32_uca1400_turkish_nopad_ai_ci", "utf32"),
    3149: ("utf32_uca1400_turkish_nopad_ai_cs", "utf32"),
    3150: ("utf32_uca1400_turkish_nopad_as_ci", "utf32"),
    3151: ("utf32_uca1400_turkish_nopad_as_cs", "utf32"),
    3152: ("utf32_uca1400_czech_ai_ci", "utf32"),
    3153: ("utf32_uca1400_czech_ai_cs", "utf32"),
    3154: ("utf32_uca1400_czech_as_ci", "utf32"),
    3155: ("utf32_uca1400_czech_as_cs", "utf32"),
    3156: ("utf32_uca1400_czech_nopad_ai_ci", "utf32"),
    3157: ("utf32_uca1400_czech_nopad_ai_cs", "utf32"),
    3158: ("utf32_uca1400_czech_nopad_as_ci", "utf32"),
    3159: ("utf32_uca1400_czech_nopad_as_cs", "utf32"),
    3160: ("utf32_uca1400_danish_ai_ci", "utf32"),
    3161: ("utf32_uca1400_danish_ai_cs", "utf32"),
    3162: ("utf32_uca1400_danish_as_ci", "utf32"),
    3163: ("utf32_uca1400_danish_as_cs", "utf32"),
    3164: ("utf32_uca1400_danish_nopad_ai_ci", "utf32"),
    3165: ("utf32_uca1400_danish_nopad_ai_cs", "utf32"),
    3166: ("utf32_uca1400_danish_nopad_as_ci", "utf32"),
    3167: ("utf32_uca1400_danish_nopad_as_cs", "utf32"),
    3168: ("utf32_uca1400_lithuanian_ai_ci", "utf32"),
    3169: ("utf32_uca1400_lithuanian_ai_cs", "utf32"),
    3170: ("utf32_uca1400_lithuanian_as_ci", "utf32"),
    3171: ("utf32_uca1400_lithuanian_as_cs", "utf32"),
    3172: ("utf32_uca1400_lithuanian_nopad_ai_ci", "utf32"),
    3173: ("utf32_uca1400_lithuanian_nopad_ai_cs", "utf32"),
    3174: ("utf32_uca1400_lithuanian_nopad_as_ci", "utf32"),
    3175: ("utf32_uca1400_lithuanian_nopad_as_cs", "utf32"),
    3176: ("utf32_uca1400_slovak_ai_ci", "utf32"),
    3177: ("utf32_uca1400_slovak_ai_cs", "utf32"),
    3178: ("utf32_uca1400_slovak_as_ci", "utf32"),
    3179: ("utf32_uca1400_slovak_as_cs", "utf32"),
    3180: ("utf32_uca1400_slovak_nopad_ai_ci", "utf32"),
    3181: ("utf32_uca1400_slovak_nopad_ai_cs", "utf32"),
    3182: ("utf32_uca1400_slovak_nopad_as_ci", "utf32"),
    3183: ("utf32_uca1400_slovak_nopad_as_cs", "utf32"),
    3184: ("utf32_uca1400_spanish2_ai_ci", "utf32"),
    3185: ("utf32_uca1400_spanish2_ai_cs", "utf32"),
    3186: ("utf32_uca1400_spanish2_as_ci", "utf32"),
    3187: ("utf32_uca1400_spanish2_as_cs", "utf32"),
    3188: ("utf32_uca1400_spanish2_nopad_ai_ci", "utf32"),
    3189: ("utf32_uca1400_spanish2_nopad_ai_cs", "utf32"),
    3190: ("utf32_uca1400_spanish2_nopad_as_ci", "utf32"),
    3191: ("utf32_uca1400_spanish2_nopad_as_cs", "utf32"),
    3192: ("utf32_uca1400_roman_ai_ci", "utf32"),
    3193: ("utf32_uca1400_roman_ai_cs", "utf32"),
    3194: ("utf32_uca1400_roman_as_ci", "utf32"),
    3195: ("utf32_uca1400_roman_as_cs", "utf32"),
    3196: ("utf32_uca1400_roman_nopad_ai_ci", "utf32"),
    3197: ("utf32_uca1400_roman_nopad_ai_cs", "utf32"),
    3198: ("utf32_uca1400_roman_nopad_as_ci", "utf32"),
    3199: ("utf32_uca1400_roman_nopad_as_cs", "utf32"),
    3200: ("utf32_uca1400_persian_ai_ci", "utf32"),
    3201: ("utf32_uca1400_persian_ai_cs", "utf32"),
    3202: ("utf32_uca1400_persian_as_ci", "utf32"),
    3203: ("utf32_uca1400_persian_as_cs", "utf32"),
    3204: ("utf32_uca1400_persian_nopad_ai_ci", "utf32"),
    3205: ("utf32_uca1400_persian_nopad_ai_cs", "utf32"),
    3206: ("utf32_uca1400_persian_nopad_as_ci", "utf32"),
    3207: ("utf32_uca1400_persian_nopad_as_cs", "utf32"),
    3208: ("utf32_uca1400_esperanto_ai_ci", "utf32"),
    3209: ("utf32_uca1400_esperanto_ai_cs", "utf32"),
    3210: ("utf32_uca1400_esperanto_as_ci", "utf32"),
    3211: ("utf32_uca1400_esperanto_as_cs", "utf32"),
    3212: ("utf32_uca1400_esperanto_nopad_ai_ci", "utf32"),
    3213: ("utf32_uca1400_esperanto_nopad_ai_cs", "utf32"),
    3214: ("utf32_uca1400_esperanto_nopad_as_ci", "utf32"),
    3215: ("utf32_uca1400_esperanto_nopad_as_cs", "utf32"),
    3216: ("utf32_uca1400_hungarian_ai_ci", "utf32"),
    3217: ("utf32_uca1400_hungarian_ai_cs", "utf32"),
    3218: ("utf32_uca1400_hungarian_as_ci", "utf32"),
    3219: ("utf32_uca1400_hungarian_as_cs", "utf32"),
    3220: ("utf32_uca1400_hungarian_nopad_ai_ci", "utf32"),
    3221: ("utf32_uca1400_hungarian_nopad_ai_cs", "utf32"),
    3222: ("utf32_uca1400_hungarian_nopad_as_ci", "utf32"),
    3223: ("utf32_uca1400_hungarian_nopad_as_cs", "utf32"),
    3224: ("utf32_uca1400_sinhala_ai_ci", "utf32"),
    3225: ("utf32_uca1400_sinhala_ai_cs", "utf32"),
    3226: ("utf32_uca1400_sinhala_as_ci", "utf32"),
    3227: ("utf32_uca1400_sinhala_as_cs", "utf32"),
    3228: ("utf32_uca1400_sinhala_nopad_ai_ci", "utf32"),
    3229: ("utf32_uca1400_sinhala_nopad_ai_cs", "utf32"),
    3230: ("utf32_uca1400_sinhala_nopad_as_ci", "utf32"),
    3231: ("utf32_uca1400_sinhala_nopad_as_cs", "utf32"),
    3232: ("utf32_uca1400_german2_ai_ci", "utf32"),
    3233: ("utf32_uca1400_german2_ai_cs", "utf32"),
    3234: ("utf32_uca1400_german2_as_ci", "utf32"),
    3235: ("utf32_uca1400_german2_as_cs", "utf32"),
    3236: ("utf32_uca1400_german2_nopad_ai_ci", "utf32"),
    3237: ("utf32_uca1400_german2_nopad_ai_cs", "utf32"),
    3238: ("utf32_uca1400_german2_nopad_as_ci", "utf32"),
    3239: ("utf32_uca1400_german2_nopad_as_cs", "utf32"),
    3256: ("utf32_uca1400_vietnamese_ai_ci", "utf32"),
    3257: ("utf32_uca1400_vietnamese_ai_cs", "utf32"),
    3258: ("utf32_uca1400_vietnamese_as_ci", "utf32"),
    3259: ("utf32_uca1400_vietnamese_as_cs", "utf32"),
    3260: ("utf32_uca1400_vietnamese_nopad_ai_ci", "utf32"),
    3261: ("utf32_uca1400_vietnamese_nopad_ai_cs", "utf32"),
    3262: ("utf32_uca1400_vietnamese_nopad_as_ci", "utf32"),
    3263: ("utf32_uca1400_vietnamese_nopad_as_cs", "utf32"),
    3264: ("utf32_uca1400_croatian_ai_ci", "utf32"),
    3265: ("utf32_uca1400_croatian_ai_cs", "utf32"),
    3266: ("utf32_uca1400_croatian_as_ci", "utf32"),
    3267: ("utf32_uca1400_croatian_as_cs", "utf32"),
    3268: ("utf32_uca1400_croatian_nopad_ai_ci", "utf32"),
    3269: ("utf32_uca1400_croatian_nopad_ai_cs", "utf32"),
    3270: ("utf32_uca1400_croatian_nopad_as_ci", "utf32"),
    3271: ("utf32_uca1400_croatian_nopad_as_cs", "utf32"),
}

MYSQL_COLLATION_NAMES: dict[int, str] = {
    122: "utf16_croatian_ci",
    149: "ucs2_croatian_ci",
    181: "utf32_croatian_ci",
    213: "utf8mb3_croatian_ci",
    245: "utf8mb4_croatian_ci",
}

MAX_BYTES_PER_CHAR: dict[str, int] = {
    "armscii8": 1,
    "ascii": 1,
    "big5": 2,
    "binary": 1,
    "cp1250": 1,
    "cp1251": 1,
    "cp1256": 1,
    "cp1257": 1,
    "cp850": 1,
    "cp852": 1,
    "cp866": 1,
    "cp932": 2,
    "dec8": 1,
    "eucjpms": 3,
    "euckr": 2,
    "gb18030": 4,
    "gb2312": 2,
    "gbk": 2,
    "geostd8": 1,
    "greek": 1,
    "hebrew": 1,
    "hp8": 1,
    "keybcs2": 1,
    "koi8r": 1,
    "koi8u": 1,
    "latin1": 1,
    "latin2": 1,
    "latin5": 1,
    "latin7": 1,
    "macce": 1,
    "macroman": 1,
    "sjis": 2,
    "swe7": 1,
    "tis620": 1,
    "ucs2": 2,
    "ujis": 3,
    "utf16": 4,
    "utf16le": 4,
    "utf32": 4,
    "utf8mb3": 3,
    "utf8mb4": 4,
}

_SERVER_TABLES: dict[str, str] = {
    "armscii8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f"
        "\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0\u2741\xa7\u0589)(\xbb\xab\u2014.\u055d,-\u055f\u2026\u055c"
        "\u055b\u055e\u0531\u0561\u0532\u0562\u0533\u0563\u0534\u0564\u0535\u0565\u0536\u0566\u0537\u0567"
        "\u0538\u0568\u0539\u0569\u053a\u056a\u053b\u056b\u053c\u056c\u053d\u056d\u053e\u056e\u053f\u056f"
        "\u0540\u0570\u0541\u0571\u0542\u0572\u0543\u0573\u0544\u0574\u0545\u0575\u0546\u0576\u0547\u0577"
        "\u0548\u0578\u0549\u0579\u054a\u057a\u054b\u057b\u054c\u057c\u054d\u057d\u054e\u057e\u054f\u057f"
        "\u0550\u0580\u0551\u0581\u0552\u0582\u0553\u0583\u0554\u0584\u0555\u0585\u0556\u0586\u2019'"
    ),
    "cp866": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\u0410\u0411\u0412\u0413\u0414\u0415\u0416\u0417\u0418\u0419\u041a\u041b\u041c\u041d\u041e\u041f"
        "\u0420\u0421\u0422\u0423\u0424\u0425\u0426\u0427\u0428\u0429\u042a\u042b\u042c\u042d\u042e\u042f"
        "\u0430\u0431\u0432\u0433\u0434\u0435\u0436\u0437\u0438\u0439\u043a\u043b\u043c\u043d\u043e\u043f"
        "\u2591\u2592\u2593\u2502\u2524\u2561\u2562\u2556\u2555\u2563\u2551\u2557\u255d\u255c\u255b\u2510"
        "\u2514\u2534\u252c\u251c\u2500\u253c\u255e\u255f\u255a\u2554\u2569\u2566\u2560\u2550\u256c\u2567"
        "\u2568\u2564\u2565\u2559\u2558\u2552\u2553\u256b\u256a\u2518\u250c\u2588\u2584\u258c\u2590\u2580"
        "\u0440\u0441\u0442\u0443\u0444\u0445\u0446\u0447\u0448\u0449\u044a\u044b\u044c\u044d\u044e\u044f"
        "\u0401\u0451\u0404\u0454\u0407\u0457\u040e\u045e\xb0\u2219\xb7\u221a\u207f\xb2\u25a0\xa0"
    ),
    "dec8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f"
        "\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0\xa1\xa2\xa3\ufffe\xa5\ufffe\xa7\xa4\xa9\xaa\xab\ufffe\ufffe\ufffe\ufffe"
        "\xb0\xb1\xb2\xb3\ufffe\xb5\xb6\xb7\ufffe\xb9\xba\xbb\xbc\xbd\ufffe\xbf"
        "\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf"
        "\ufffe\xd1\xd2\xd3\xd4\xd5\xd6\u0152\xd8\xd9\xda\xdb\xdc\u0178\ufffe\xdf"
        "\xe0\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef"
        "\ufffe\xf1\xf2\xf3\xf4\xf5\xf6\u0153\xf8\xf9\xfa\xfb\xfc\xff\ufffe\ufffe"
    ),
    "geostd8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\u20ac\ufffe\u201a\ufffe\u201e\u2026\u2020\u2021\ufffe\u2030\ufffe\u2039\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\u2018\u2019\u201c\u201d\u2022\u2013\u2014\ufffe\ufffe\ufffe\u203a\ufffe\ufffe\ufffe\ufffe"
        "\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf"
        "\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf"
        "\u10d0\u10d1\u10d2\u10d3\u10d4\u10d5\u10d6\u10f1\u10d7\u10d8\u10d9\u10da\u10db\u10dc\u10f2\u10dd"
        "\u10de\u10df\u10e0\u10e1\u10e2\u10f3\u10e3\u10e4\u10e5\u10e6\u10e7\u10e8\u10e9\u10ea\u10eb\u10ec"
        "\u10ed\u10ee\u10f4\u10ef\u10f0\u10f5\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\u2116\ufffe\ufffe"
    ),
    "greek": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f"
        "\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0\u02bd\u02bc\xa3\ufffe\ufffe\xa6\xa7\xa8\xa9\ufffe\xab\xac\xad\ufffe\u2015"
        "\xb0\xb1\xb2\xb3\u0384\u0385\u0386\xb7\u0388\u0389\u038a\xbb\u038c\xbd\u038e\u038f"
        "\u0390\u0391\u0392\u0393\u0394\u0395\u0396\u0397\u0398\u0399\u039a\u039b\u039c\u039d\u039e\u039f"
        "\u03a0\u03a1\ufffe\u03a3\u03a4\u03a5\u03a6\u03a7\u03a8\u03a9\u03aa\u03ab\u03ac\u03ad\u03ae\u03af"
        "\u03b0\u03b1\u03b2\u03b3\u03b4\u03b5\u03b6\u03b7\u03b8\u03b9\u03ba\u03bb\u03bc\u03bd\u03be\u03bf"
        "\u03c0\u03c1\u03c2\u03c3\u03c4\u03c5\u03c6\u03c7\u03c8\u03c9\u03ca\u03cb\u03cc\u03cd\u03ce\ufffe"
    ),
    "hebrew": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f"
        "\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0\ufffe\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xd7\xab\xac\xad\xae\u203e"
        "\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xf7\xbb\xbc\xbd\xbe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\u2017"
        "\u05d0\u05d1\u05d2\u05d3\u05d4\u05d5\u05d6\u05d7\u05d8\u05d9\u05da\u05db\u05dc\u05dd\u05de\u05df"
        "\u05e0\u05e1\u05e2\u05e3\u05e4\u05e5\u05e6\u05e7\u05e8\u05e9\u05ea\ufffe\ufffe\u200e\u200f\ufffe"
    ),
    "keybcs2": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\u010c\xfc\xe9\u010f\xe4\u010e\u0164\u010d\u011b\u011a\u0139\xcd\u013e\u013a\xc4\xc1"
        "\xc9\u017e\u017d\xf4\xf6\xd3\u016f\xda\xfd\xd6\xdc\u0160\u013d\xdd\u0158\u0165"
        "\xe1\xed\xf3\xfa\u0148\u0147\u016e\xd4\u0161\u0159\u0155\u0154\xbc\xa1\xab\xbb"
        "\u2591\u2592\u2593\u2502\u2524\u2561\u2562\u2556\u2555\u2563\u2551\u2557\u255d\u255c\u255b\u2510"
        "\u2514\u2534\u252c\u251c\u2500\u253c\u255e\u255f\u255a\u2554\u2569\u2566\u2560\u2550\u256c\u2567"
        "\u2568\u2564\u2565\u2559\u2558\u2552\u2553\u256b\u256a\u2518\u250c\u2588\u2584\u258c\u2590\u2580"
        "\u03b1\xdf\u0393\u03c0\u03a3\u03c3\xb5\u03c4\u03a6\u0398\u03a9\u03b4\u221e\u03c6\u03b5\u2229"
        "\u2261\xb1\u2265\u2264\u2320\u2321\xf7\u2248\xb0\u2219\xb7\u221a\u207f\xb2\u25a0\xa0"
    ),
    "koi8u": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "@ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ[\x5c]^_"
        "`abcdefghijklmno"
        "pqrstuvwxyz{|}~\x7f"
        "\u2500\u2502\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u253c\u2580\u2584\u2588\u258c\u2590"
        "\u2591\u2592\u2593\u2320\u25a0\u2022\u221a\u2248\u2264\u2265\xa0\u2321\xb0\xb2\xb7\xf7"
        "\u2550\u2551\u2552\u0451\u0454\u2554\u0456\u0457\u2557\u2558\u2559\u255a\u255b\u0491\u255d\u255e"
        "\u255f\u2560\u2561\u0401\u0404\u2563\u0406\u0407\u2566\u2567\u2568\u2569\u256a\u0490\u256c\xa9"
        "\u044e\u0430\u0431\u0446\u0434\u0435\u0444\u0433\u0445\u0438\u0439\u043a\u043b\u043c\u043d\u043e"
        "\u043f\u044f\u0440\u0441\u0442\u0443\u0436\u0432\u044c\u044b\u0437\u0448\u044d\u0449\u0447\u044a"
        "\u042e\u0410\u0411\u0426\u0414\u0415\u0424\u0413\u0425\u0418\u0419\u041a\u041b\u041c\u041d\u041e"
        "\u041f\u042f\u0420\u0421\u0422\u0423\u0416\u0412\u042c\u042b\u0417\u0428\u042d\u0429\u0427\u042a"
    ),
    "swe7": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\x22#$%&'()*+,-./"
        "0123456789:;<=>?"
        "\xc9ABCDEFGHIJKLMNO"
        "PQRSTUVWXYZ\xc4\xd6\xc5\xdc_"
        "\xe9abcdefghijklmno"
        "pqrstuvwxyz\xe4\xf6\xe5\xfc\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
        "\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe\ufffe"
    ),
}

# ---------------------------------------------------------------------------------------------
# Character set -> Python codec.
# ---------------------------------------------------------------------------------------------

#: MySQL/MariaDB character set name -> Python codec name; ``None`` means "keep the bytes"
#: (``binary``).  "exact" = decodes every byte sequence the server accepts to the same code point
#: as the server (measured against MariaDB 10.11, see the module docstring).
CODECS: dict[str, str | None] = {
    # Unicode
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",  # MySQL < 8.0.30 / MariaDB < 10.6 name of utf8mb3
    "ucs2": "utf-16-be",  # UCS-2 is the BMP subset of UTF-16BE
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "binary": None,
    # Single-byte, exact
    "ascii": "ascii",  # bytes >= 0x80 are invalid in both -> hex
    "latin1": "cp1252",  # exact together with decode_text(): MySQL's latin1 is cp1252 whose 5
    # undefined bytes 0x81 0x8D 0x8F 0x90 0x9D are the C1 controls U+0081...
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1257": "cp1257",
    "cp850": "cp850",
    "cp852": "cp852",
    "koi8r": "koi8-r",
    "macce": "mac-latin2",
    "macroman": "mac-roman",
    "hp8": "hp-roman8",
    # Single-byte, approximations by a Python codec
    "cp1256": "cp1256",  # Python also decodes 8 bytes the server leaves unmapped
    # (0x8A 0x8F 0x98 0x9A 0x9F 0xAA 0xC0 0xFF: the newer Windows-1256 letters).
    "tis620": "tis-620",  # the server maps 9 undefined bytes (0xA0 0xDB-0xDE 0xFC-0xFF) to
    # U+FFFD; Python rejects them -> hex.
    # Single-byte, the server's own table (no Python codec, or Python's differs)
    "armscii8": "binlake-armscii8",  # no Python codec
    "dec8": "binlake-dec8",  # no Python codec (DEC MCS)
    "geostd8": "binlake-geostd8",  # no Python codec (Georgian PS)
    "keybcs2": "binlake-keybcs2",  # no Python codec (Kamenicky)
    "swe7": "binlake-swe7",  # no Python codec (7-bit Swedish)
    "cp866": "binlake-cp866",  # Python cp866: 0xFC is U+2116 and 0xFD U+00A4; server U+207F, U+00B2
    "greek": "binlake-greek",  # Python iso8859-7: 0xA1/0xA2 are U+2018/U+2019 (server U+02BD/
    # U+02BC), and 0xA4 0xA5 0xAA decode although the server has no mapping for them
    "hebrew": "binlake-hebrew",  # Python iso8859-8: 0xAF is U+00AF; server U+203E
    "koi8u": "binlake-koi8u",  # Python koi8-u: 0x95 is U+2219; server U+2022
    # Multi-byte
    "cp932": "cp932",  # exact (all 9794 sequences)
    "gbk": "gbk",  # exact (21918)
    "gb2312": "gb2312",  # exact (7572)
    "euckr": "cp949",  # exact (17175): the server's euckr includes the UHC/cp949 extension,
    # which Python's euc_kr lacks (8823 sequences would fail)
    "big5": "big5",  # exact for every character the server defines; 14 sequences the server maps
    # to U+FFFD decode to real characters or fail in Python
    "sjis": "shift_jis",  # 1 difference: 0x815F is U+005C on the server, U+FF3C in Python
    "ujis": "euc_jp",  # 0xA1C0 is U+005C on the server, U+FF3C in Python; the user-defined area
    # (lead bytes 0xF5-0xFE, 1880 sequences, server U+E000..) fails in Python -> hex
    "eucjpms": "euc_jp",  # approximation: Python has no eucJP-ms.  8 sequences differ (the
    # server's Microsoft variants 0xA1C1 U+FF5E, 0xA1C2 U+2225, 0xA1DD U+FF0D, 0xA1F1 U+FFE0,
    # 0xA1F2 U+FFE1, 0xA2CC U+FFE2, 0x8FA2B7 U+FF5E, 0x8FA2C3 U+FFE4) and 2069 of 15205 fail
    # (user-defined area, IBM extensions) -> hex
    "gb18030": "gb18030",  # MySQL only; not measured (MariaDB has no gb18030)
}

_BINLAKE_PREFIX = "binlake_"  # codecs.lookup() hands search functions names with '-' as '_'


def _search(name: str) -> codecs.CodecInfo | None:
    norm = name.lower().replace("-", "_").replace(" ", "_")
    if not norm.startswith(_BINLAKE_PREFIX):
        return None
    charset = norm[len(_BINLAKE_PREFIX) :]
    table = _SERVER_TABLES.get(charset)
    if table is None:
        return None
    encoding_map = codecs.charmap_build(table)

    def decode(data: Any, errors: str = "strict") -> tuple[str, int]:  # data: any buffer
        return codecs.charmap_decode(data, errors, table)

    def encode(text: str, errors: str = "strict") -> tuple[bytes, int]:
        return codecs.charmap_encode(text, errors, encoding_map)

    return codecs.CodecInfo(encode, decode, name=f"binlake-{charset}")


codecs.register(_search)


def _c1_controls(exc: UnicodeError) -> tuple[str, int]:
    """Error handler for cp1252: an undefined byte decodes to the C1 control of the same number."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return exc.object[exc.start : exc.end].decode("latin-1"), exc.end


_LATIN1_ERRORS: Final = "binlake-latin1"
codecs.register_error(_LATIN1_ERRORS, _c1_controls)

_CHARSET_BY_ID: Final[dict[int, str]] = {cid: cs for cid, (_name, cs) in COLLATIONS.items()}
_CODEC_BY_ID: Final[dict[int, str | None]] = {
    cid: CODECS.get(cs) for cid, cs in _CHARSET_BY_ID.items()
}
_CP1252_NAMES: Final = frozenset({"cp1252", "windows-1252", "windows_1252", "1252"})


def collation_of(collation_id: int) -> str | None:
    """The collation name of ``collation_id`` (MariaDB's spelling), or None if unknown."""
    entry = COLLATIONS.get(collation_id)
    return entry[0] if entry is not None else None


def charset_of(collation_id: int) -> str | None:
    """The character set of ``collation_id`` (``"utf8mb4"``, ``"latin1"``...), None if unknown."""
    return _CHARSET_BY_ID.get(collation_id)


def codec_of(collation_id: int) -> str | None:
    """The Python codec for ``collation_id``; None for ``binary`` and for unknown ids."""
    return _CODEC_BY_ID.get(collation_id)


def max_bytes_per_char(charset: str) -> int:
    """The longest encoding of one character in ``charset`` (the server's ``mbmaxlen``).

    The row decoder needs it for the rule that a CHAR(n) column whose maximum byte length
    ``n * mbmaxlen`` exceeds 255 carries a 2-byte length prefix.  Raises ValueError for a
    character set this module does not know: a guessed width would misread the row.
    """
    if charset == "utf8":
        charset = "utf8mb3"
    try:
        return MAX_BYTES_PER_CHAR[charset]
    except KeyError:
        raise ValueError(f"unknown character set {charset!r}") from None


def decode_text(data: bytes, codec: str | None) -> str | dict[str, str]:
    """``data`` decoded with ``codec``; ``{"hex": data.hex()}`` if codec is None or fails.

    Never raises.  ``cp1252`` (MySQL's latin1) decodes every byte, as the server does: the five
    bytes cp1252 leaves undefined become the C1 controls U+0081, U+008D, U+008F, U+0090, U+009D.
    """
    try:
        raw = bytes(data)
    except Exception:
        return {"hex": ""}
    if codec is None:
        return {"hex": raw.hex()}
    try:
        return raw.decode(codec)
    except UnicodeDecodeError:
        if codec.lower() in _CP1252_NAMES:
            return raw.decode("cp1252", _LATIN1_ERRORS)
    except Exception:  # unknown codec name, codec bugs: fall through to hex
        pass
    return {"hex": raw.hex()}
