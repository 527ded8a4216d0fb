-- HiBench's join (Pavlo et al.'s join task): per source IP, the average rank of the pages it visited and the
-- revenue it brought in one year of visits. HiBench filters with datediff(UV.visitDate, '1999-01-01') >= 0 AND
-- datediff(UV.visitDate, '2000-01-01') <= 0 on a string column; on a DATE column that is exactly the BETWEEN below
-- (both ends included), which Spark SQL and DuckDB read alike.
SELECT sourceIP, AVG(pageRank) AS avgPageRank, SUM(adRevenue) AS totalRevenue
FROM rankings R
JOIN (SELECT sourceIP, destURL, adRevenue
      FROM uservisits UV
      WHERE UV.visitDate BETWEEN DATE '1999-01-01' AND DATE '2000-01-01') NUV
  ON R.pageURL = NUV.destURL
GROUP BY sourceIP
ORDER BY totalRevenue DESC
