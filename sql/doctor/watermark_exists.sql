-- watermark_exists: has `doctor --incremental` ever written its watermark here?
SELECT to_regclass('wfctl.doctor_watermark') IS NOT NULL
   AND to_regclass('wfctl.doctor_flagged') IS NOT NULL AS present;
